"""The peak resident memory of this process, from /proc/self/status's VmHWM: the
high-water mark of this program's own address space. (getrusage's ru_maxrss would
include the RSS of the benchmark driver this process was forked from, which Linux keeps
across exec.)"""


def peak_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")
