#!/usr/bin/env python3
"""Rewrites the kernel launches of a CUDA C++ file for the CPU emulator of the kernels.

    kernel<T><<<grid, block, bytes, stream>>>(a, b)
becomes
    ::dlc_emu::launch(::dlc_emu::Config(grid, block, bytes, stream), kernel<T>, a, b)

so that a host C++ compiler builds the file (CudaEmulator.h supplies the rest). Line
breaks are kept and a #line directive names the original file (relative to the output,
so that the text, and ccache's key, do not depend on where the checkout is), so that
diagnostics and debuggers point at the real source.

Usage: expand_launches.py INPUT.cu OUTPUT.cpp
"""
import os
import sys


def kernel_start(text, end):
    """Start of the kernel expression that ends just before `end` (the '<<<')."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if text[i - 1] == '>':  # explicit template arguments: skip the balanced <...>
        depth = 0
        while True:
            i -= 1
            if text[i] == '>':
                depth += 1
            elif text[i] == '<':
                depth -= 1
                if depth == 0:
                    break
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in '_:'):
        i -= 1
    return i


def closing_paren(text, open_at):
    """Index of the ')' that closes the '(' at `open_at`."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == '(':
            depth += 1
        elif text[i] == ')':
            depth -= 1
            if depth == 0:
                return i
    raise ValueError('unbalanced parentheses after a kernel launch')


def expand(text):
    out = []
    pos = 0
    while True:
        launch = text.find('<<<', pos)
        if launch < 0:
            out.append(text[pos:])
            return ''.join(out)
        start = kernel_start(text, launch)
        config_end = text.index('>>>', launch)
        args_open = config_end + 3
        while text[args_open].isspace():
            args_open += 1
        if text[args_open] != '(':
            raise ValueError('a kernel launch without arguments at offset %d' % launch)
        args_close = closing_paren(text, args_open)
        kernel = text[start:launch].rstrip()
        config = text[launch + 3:config_end]
        args = text[args_open + 1:args_close]
        separator = ', ' if args.strip() else ''
        out.append(text[pos:start])
        out.append('::dlc_emu::launch(::dlc_emu::Config(%s), %s%s%s)' %
                   (config, kernel, separator, args))
        pos = args_close + 1


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source) as f:
        text = f.read()
    with open(target, 'w') as f:
        f.write('#line 1 "%s"\n' % os.path.relpath(source, os.path.dirname(target)))
        f.write(expand(text))


if __name__ == '__main__':
    main()
