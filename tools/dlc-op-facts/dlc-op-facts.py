#!/usr/bin/env python3
"""Writes the MLIR-free facts of the dlc dialect's ops, from its ODS.

The dialect's op definitions (DLCOps.td) are the one place where an op's name, its
attributes with their defaults, and the traits that passes and the runtime act on are
written. The compiler reads them through MLIR; the runtime, the kernels and the eager
frontend link no MLIR, so this script turns `llvm-tblgen --dump-json` of the ODS into
a C++ header they include (through dlc/Core/OpFacts.h):

  - dlc::ops::<mnemonic>: the op's name ("dlc.conv2d"), for kernel tables and op tables;
  - dlc::op_attrs::<mnemonic>::<attribute>: each scalar attribute with a default, as an
    AttrFact (name and default value), for kernels and shape rules that read it;
  - dlc::op_enums::<Enum>: the dialect's integer enums (ReduceKind, DeviceKind, ...);
  - dlc::op_facts::kTable: per op, its name, traits, layout rule (DLC_LayoutRule) and
    attributes with their kinds;
  - DLC_ELEMENTWISE_OPS(X): every op with DLC_ElementwiseKernel, as
    X(mnemonic, Functor, kind, operands), where Functor is its scalar body in
    dlc/Core/ElementwiseMath.h (the mnemonic in CamelCase), kind is unary, binary
    (numpy broadcasting, DLC_Broadcasting) or gradient (two operands of one shape), and
    operands is float (DLC_FloatTensor) or numeric: the CPU and CUDA kernels and the
    code generator's scalar bodies are instantiated from this list.

Usage: dlc-op-facts.py --tblgen LLVM_TBLGEN -I DIR... --td DLCOps.td --out FILE
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# ODS trait defs -> the flag the generated table gives them (OpFacts.h, OpTrait).
TRAIT_FLAGS = {
    "DLC_ElementwiseKernel": "elementwise_kernel",
    "DLC_Broadcasting": "broadcasting",
    "DLC_BatchShapedResult": "batch_shaped_result",
}

# Base attribute defs -> (AttrKind, C++ type of a default, how to spell the default).
SCALAR_KINDS = {
    "BoolAttr": ("boolean", "bool"),
    "I64Attr": ("integer", "int64_t"),
    "F64Attr": ("real", "double"),
}
OTHER_KINDS = {
    "UnitAttr": "flag",
    "DenseI64ArrayAttr": "integers",
    "StrAttr": "string",
}


def fail(message):
    sys.stderr.write("dlc-op-facts: " + message + "\n")
    sys.exit(1)


def records(tblgen, includes, td):
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "records.json")
        command = [tblgen, "--dump-json", "-o", out, td]
        for directory in includes:
            command[1:1] = ["-I", directory]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            fail("llvm-tblgen failed on %s:\n%s" % (td, result.stderr))
        with open(out) as stream:
            return json.load(stream)


def attribute_kind(all_records, definition):
    """(kind, base def) of an attribute constraint, seeing through DefaultValuedAttr."""
    record = all_records[definition]
    base = record.get("baseAttr")
    base_name = base["def"] if isinstance(base, dict) else definition
    if base_name in SCALAR_KINDS:
        return SCALAR_KINDS[base_name][0], base_name
    if base_name in OTHER_KINDS:
        return OTHER_KINDS[base_name], base_name
    if "EnumAttrInfo" in all_records[base_name].get("!superclasses", []) or \
            "EnumAttr" in all_records[base_name].get("!superclasses", []):
        return "enumeration", base_name
    return "other", base_name


def spell_default(kind, text):
    text = text.strip()
    if kind in ("boolean", "flag"):
        if text not in ("true", "false"):
            fail("a boolean default must be true or false, not %r" % text)
        return text
    if kind == "integer":
        return "int64_t(%d)" % int(text)
    if kind == "real":
        return repr(float(text))
    fail("no C++ spelling for a %s default" % kind)


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def arity(all_records, record):
    """(min operands, max operands, min results, max results); -1: no maximum."""
    def count(arguments):
        low, high = 0, 0
        for argument, _ in arguments:
            superclasses = all_records[argument["def"]].get("!superclasses", [])
            if "Attr" in superclasses:
                continue
            if "Variadic" in superclasses:
                high = -1
            elif "Optional" in superclasses:
                high = high if high < 0 else high + 1
            else:
                low += 1
                high = high if high < 0 else high + 1
        return low, high
    return count(record["arguments"]["args"]) + count(record["results"]["args"])


def generate(all_records):
    ops = []
    for definition in sorted(all_records["!instanceof"]["Op"]):
        record = all_records[definition]
        dialect = all_records[record["opDialect"]["def"]]
        if dialect.get("name") != "dlc":
            continue
        mnemonic = record["opName"]
        traits = [t["def"] for t in record.get("traits", []) if isinstance(t, dict)]
        layout_rule = "none"
        for trait in traits:
            trait_record = all_records[trait]
            if "DLC_LayoutRule" in trait_record.get("!superclasses", []):
                # ParamNativeOpTrait spells "LayoutRule<::dlc::LayoutRule::conv>::Impl".
                match = re.search(r"::dlc::LayoutRule::(\w+)>", trait_record["trait"])
                if not match:
                    fail("%s: cannot read its layout rule from %r" %
                         (definition, trait_record["trait"]))
                layout_rule = match.group(1)
        attributes = []
        for argument, name in record["arguments"]["args"]:
            argument_record = all_records[argument["def"]]
            if "Attr" not in argument_record.get("!superclasses", []):
                continue
            kind, _ = attribute_kind(all_records, argument["def"])
            default = argument_record.get("defaultValue")
            if isinstance(default, str) and default.strip() == "":
                default = None
            attributes.append((name, kind, default))
        operand_types = [argument["def"] for argument, _ in record["arguments"]["args"]
                         if "Attr" not in all_records[argument["def"]].get("!superclasses", [])]
        ops.append((mnemonic, definition, record.get("summary", ""), traits, attributes,
                    layout_rule, arity(all_records, record), operand_types))
    if not ops:
        fail("no dlc ops in the records")

    lines = [
        "// Generated from the dlc dialect's ODS (DLCOps.td) by tools/dlc-op-facts; do not",
        "// edit. Include dlc/Core/OpFacts.h, not this file.",
        "",
        "namespace dlc::ops {",
    ]
    for mnemonic, definition, summary, _, _, _, _, _ in ops:
        lines.append("/// %s (%s)" % (summary.strip() or "dlc." + mnemonic, definition))
        lines.append("inline constexpr char %s[] = \"dlc.%s\";" % (mnemonic, mnemonic))
    lines.append("} // namespace dlc::ops")
    lines.append("")
    lines.append("namespace dlc::op_enums {")
    for definition in sorted(all_records["!instanceof"].get("I32EnumAttr", [])):
        enum = all_records[definition]
        if enum.get("cppNamespace") != "::mlir::dlc":
            continue
        cases = [all_records[case["def"]] for case in enum["enumerants"]]
        lines.append("/// %s (%s)" % (enum.get("summary", "").strip(), definition))
        lines.append("enum class %s : int64_t { %s };" % (
            enum["className"], ", ".join("%s = %d" % (c["symbol"], c["value"]) for c in cases)))
    lines.append("} // namespace dlc::op_enums")
    lines.append("")
    for mnemonic, _, _, _, attributes, _, _, _ in ops:
        facts = [(n, k, d) for n, k, d in attributes if d is not None and k in
                 ("boolean", "flag", "integer", "real")]
        if not facts:
            continue
        lines.append("namespace dlc::op_attrs::%s {" % mnemonic)
        for name, kind, default in facts:
            cpp_type = {"boolean": "bool", "flag": "bool", "integer": "int64_t",
                        "real": "double"}[kind]
            lines.append("inline constexpr AttrFact<%s> %s{\"%s\", %s};" %
                         (cpp_type, name, name, spell_default(kind, default)))
        lines.append("} // namespace dlc::op_attrs::%s" % mnemonic)
    lines.append("")
    lines.append("namespace dlc::op_facts {")
    for mnemonic, _, _, _, attributes, _, _, _ in ops:
        if not attributes:
            continue
        lines.append("inline constexpr AttrInfo k%sAttrs[] = {" % "".join(
            part.capitalize() for part in mnemonic.split("_")))
        for name, kind, default in attributes:
            lines.append("    {\"%s\", AttrKind::%s, %s}," %
                         (name, kind, c_string(default.strip()) if default is not None
                          else "nullptr"))
        lines.append("};")
    lines.append("inline constexpr OpInfo kTable[] = {")
    for mnemonic, _, _, traits, attributes, layout_rule, counts, _ in ops:
        flags = [TRAIT_FLAGS[t] for t in traits if t in TRAIT_FLAGS]
        flag_text = " | ".join("unsigned(OpTrait::%s)" % f for f in flags) or "0u"
        attrs_text = ("k%sAttrs" % "".join(p.capitalize() for p in mnemonic.split("_"))
                      if attributes else "nullptr")
        lines.append("    {ops::%s, %s, %s, %d, LayoutRule::%s, %d, %d, %d, %d}," % (
            (mnemonic, flag_text, attrs_text, len(attributes), layout_rule) + counts))
    lines.append("};")
    lines.append("} // namespace dlc::op_facts")
    lines.append("")
    lines.append("// X(mnemonic, Functor, kind, operands) per element-wise kernel op.")
    lines.append("#define DLC_ELEMENTWISE_OPS(X) \\")
    for mnemonic, definition, _, traits, _, _, _, operand_types in ops:
        if "DLC_ElementwiseKernel" not in traits:
            continue
        if len(operand_types) == 1:
            kind = "unary"
        elif len(operand_types) == 2:
            kind = "binary" if "DLC_Broadcasting" in traits else "gradient"
        else:
            fail("%s: an element-wise kernel op takes one or two operands, not %d" %
                 (definition, len(operand_types)))
        if operand_types[0] not in ("DLC_FloatTensor", "DLC_NumericTensor"):
            fail("%s: an element-wise kernel op's operands are DLC_FloatTensor or "
                 "DLC_NumericTensor, not %s" % (definition, operand_types[0]))
        operands = "float" if operand_types[0] == "DLC_FloatTensor" else "numeric"
        functor = "".join(part.capitalize() for part in mnemonic.split("_"))
        lines.append("  X(%s, %s, %s, %s) \\" % (mnemonic, functor, kind, operands))
    lines.append("")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tblgen", required=True)
    parser.add_argument("-I", dest="includes", action="append", default=[])
    parser.add_argument("--td", required=True)
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    text = generate(records(options.tblgen, options.includes, options.td))
    # Rewrite only on change, so that a touched .td does not rebuild the runtime.
    if os.path.exists(options.out):
        with open(options.out) as stream:
            if stream.read() == text:
                return
    os.makedirs(os.path.dirname(options.out), exist_ok=True)
    with open(options.out + ".tmp", "w") as stream:
        stream.write(text)
    os.replace(options.out + ".tmp", options.out)


if __name__ == "__main__":
    main()
