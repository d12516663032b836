"""What the daemon benchmarks read of a process from /proc, and the percentile they report,
in one place for bench/daemon.py (figures 1 to 6) and bench/fanout.py (figure 9)."""
import math
import os


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list."""
    k = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[k - 1]


def cpu_seconds(pid):
    """utime + stime of a whole process (every thread, live or exited) in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def smaps_kib(pid):
    """{field: KiB} of /proc/PID/smaps_rollup (Pss, Private_Clean, Private_Dirty, ...)."""
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1])
    return out


def private_kib(pid):
    """Private_Clean + Private_Dirty of /proc/PID/smaps_rollup, in KiB."""
    s = smaps_kib(pid)
    return s.get("Private_Clean", 0) + s.get("Private_Dirty", 0)


def status_kib(pid, key):
    """A KiB field of /proc/PID/status (VmRSS, VmHWM, ...)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def mib(kib):
    return "%.1f MiB" % (kib / 1024.0)
