"""esxtop batch-mode CSV writer (`esxtop -b`), in the shapes real captures come in.

Counter names are copied verbatim from a real capture; the columns the model drives (disk latency and
rates, uplink drops and throughput, CPU utilisation and group ready time) are printed as given, and the
filler around them (memory, system groups, adapters, vmk/VM ports, interrupts) is derived from them so
that a capture stays internally consistent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

__all__ = ["STYLES", "render_esxtop"]

STYLES = ("raw", "resaved", "stray")
_FIRST = "(PDH-CSV 4.0) (UTC)(0)"

_DISK_RATES = (
    ("Commands/sec", "cmds_per_s"),
    ("Reads/sec", "reads_per_s"),
    ("Writes/sec", "writes_per_s"),
    ("MBytes Read/sec", "mb_read_per_s"),
    ("MBytes Written/sec", "mb_written_per_s"),
)
_LAT = ("Driver", "Kernel", "Guest", "Queue")
_GROUP_CTRS = (
    "Members", "% Used", "% Run", "% System", "% Wait", "% Ready", "% Idle",
    "% Overlap", "% CoStop", "% Max Limited", "% Swap Wait",
)  # fmt: skip
_PORT_CTRS = (
    "Packets Transmitted/sec", "MBits Transmitted/sec", "Average Packet Size  Transmitted (Bytes)",
    "Packets Received/sec", "MBits Received/sec", "Average Packet Size  Received (Bytes)",
    "% Outbound Packets Dropped", "% Received Packets Dropped",
)  # fmt: skip
_MEM_STATIC = (
    "Kernel Managed MBytes", "Kernel MinFree MBytes", "Kernel Reserved MBytes", "Kernel Unreserved MBytes",
    "Kernel State", "PShare Shared MBytes", "PShare Common MBytes", "PShare Savings MBytes",
    "Swap Used MBytes", "Swap Target MBytes", "Swap MBytes Read/sec", "Swap MBytes Write/sec",
    "Total Compressed MBytes", "Total Saved By Compression MBytes", "Memctl Current MBytes",
    "Memctl Target MBytes", "Memctl Max MBytes",
)  # fmt: skip
# (gid, name, members, base % used) of worlds every ESXi host runs
_SYSTEM_GROUPS = (
    (1, "system", 160, 1.5), (8, "helper", 130, 0.05), (9, "drivers", 14, 0.2), (10, "ft", 4, 0.0),
    (11, "vmotion", 4, 0.0), (1213, "vobd.2097718", 24, 0.02), (5481, "hostd.2098125", 31, 0.8),
    (10851, "vpxa.2099317", 38, 0.3),
)  # fmt: skip
_STRAY = ("TERM environment variable not set.", "esxtop: unable to open terminal, falling back to batch mode")


class _Cols:
    """Columns in print order; each is a (T,) float row with its printing kind."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.names: list[str] = []
        self.data: list[np.ndarray | float] = []
        self.integer: list[bool] = []
        self.zero_first: list[bool] = []

    def add(self, name: str, v: np.ndarray | float, *, integer: bool = False, rate: bool = False) -> None:
        self.names.append(name)
        self.data.append(v)
        self.integer.append(integer)
        self.zero_first.append(rate)


def _arr(m: Mapping[str, np.ndarray], key: str, n: int, what: str) -> np.ndarray:
    a = np.nan_to_num(np.asarray(m[key], dtype=np.float64))
    if a.shape != (n,):
        raise ValueError(f"{what}[{key!r}] has shape {a.shape}, times has ({n},)")
    return np.maximum(a, 0.0)


def _disks(c: _Cols, disks: Mapping[str, Mapping[str, np.ndarray]], rng: np.random.Generator) -> None:
    n = c.n
    tot = {k: np.zeros(n) for _, k in _DISK_RATES}
    wlat = {k: np.zeros(n) for k in _LAT}
    dev_cols: list[tuple[str, dict[str, np.ndarray], float]] = []
    for naa, m in disks.items():
        d = {k: _arr(m, k, n, naa) for _, k in _DISK_RATES}
        d["Driver"], d["Kernel"], d["Guest"] = (_arr(m, k, n, naa) for k in ("davg_ms", "kavg_ms", "gavg_ms"))
        # QAVG is the part of KAVG spent queued in the kernel
        d["Queue"] = d["Kernel"] * rng.uniform(0.55, 0.95, n)
        qdepth = float(rng.choice([32, 64, 254, 1023]))
        dev_cols.append((naa, d, qdepth))
        for _, k in _DISK_RATES:
            tot[k] += d[k]
        for k in _LAT:
            wlat[k] += d[k] * d["cmds_per_s"]
    # adapter view first, as esxtop prints it: the boot AHCI controller, then the controller of the devices
    boot = rng.uniform(0.5, 4.0, n)
    hba: list[tuple[str, dict[str, np.ndarray]]] = [
        ("vmhba0", {"cmds_per_s": boot, "reads_per_s": boot * 0.2, "writes_per_s": boot * 0.8,
                    "mb_read_per_s": boot * 0.004, "mb_written_per_s": boot * 0.01,
                    "Driver": rng.uniform(0.3, 1.5, n), "Kernel": rng.uniform(0.01, 0.05, n),
                    "Queue": np.zeros(n)}),
    ]  # fmt: skip
    hba[0][1]["Guest"] = hba[0][1]["Driver"] + hba[0][1]["Kernel"]
    cmds = np.maximum(tot["cmds_per_s"], 1e-9)
    hba.append((f"vmhba{int(rng.choice([1, 2, 3]))}", {**tot, **{k: wlat[k] / cmds for k in _LAT}}))
    for name, d in hba:
        base = f"Physical Disk Adapter({name})\\"
        for label, k in _DISK_RATES:
            c.add(base + label, d[k], rate=True)
        for k in _LAT:
            c.add(f"{base}Average {k} MilliSec/Command", d[k], rate=True)
    for naa, d, qdepth in dev_cols:
        base = f"Physical Disk SCSI Device({naa})\\"
        active = np.rint(d["cmds_per_s"] * d["Driver"] / 1000.0)
        queued = np.rint(d["cmds_per_s"] * d["Queue"] / 1000.0)
        c.add(base + "Device Q Depth", qdepth, integer=True)
        c.add(base + "World Q Depth", 0.0, integer=True)
        c.add(base + "Active Commands", active, integer=True, rate=True)
        c.add(base + "Queued Commands", queued, integer=True, rate=True)
        c.add(base + "% Used", np.minimum(active / qdepth * 100.0, 100.0), rate=True)
        c.add(base + "Load", (active + queued) / qdepth, rate=True)
        for label, k in _DISK_RATES:
            c.add(base + label, d[k], rate=True)
        for k in _LAT:
            c.add(f"{base}Average {k} MilliSec/Command", d[k], rate=True)


def _port(c: _Cols, inst: str, tx: np.ndarray, rx: np.ndarray, ptx: np.ndarray, prx: np.ndarray,
          dtx: np.ndarray | float = 0.0, drx: np.ndarray | float = 0.0) -> None:  # fmt: skip
    # esxtop prints the mean packet size as a whole number of bytes
    stx = np.rint(np.divide(tx * 1e6 / 8.0, ptx, out=np.zeros_like(tx), where=ptx > 0.005))
    srx = np.rint(np.divide(rx * 1e6 / 8.0, prx, out=np.zeros_like(rx), where=prx > 0.005))
    for name, v in zip(_PORT_CTRS, (ptx, tx, stx, prx, rx, srx, dtx, drx), strict=True):
        c.add(f"Network Port({inst})\\{name}", v)


def _network(c: _Cols, nics: Mapping[str, Mapping[str, np.ndarray]], rng: np.random.Generator) -> None:
    n = c.n
    z = np.zeros(n)
    dvs = bool(rng.random() < 0.6)
    portset, pid = ("DvsPortset-0", 2214592512) if dvs else ("vSwitch0", 33554432)
    _port(c, f"{portset}:{pid + 1}:Management", z, z, z, z)
    sums = [np.zeros(n) for _ in range(4)]
    for i, (vmnic, m) in enumerate(nics.items()):
        v = [_arr(m, k, n, vmnic) for k in ("mbits_tx", "mbits_rx", "pkts_tx", "pkts_rx")]
        drops = [_arr(m, k, n, vmnic) for k in ("tx_drop_pct", "rx_drop_pct")]
        _port(c, f"{portset}:{pid + 2 + 2 * i}:{vmnic}", *v, *drops)
        _port(c, f"{portset}:{pid + 3 + 2 * i}:Shadow of {vmnic}", z, z, z, z)
        for s, x in zip(sums, v, strict=True):
            s += x
    kbase = 67108864 + int(rng.integers(2, 40)) if dvs else pid + 3 + 2 * len(nics)
    mgmt = [rng.uniform(0.01, 0.08, n) for _ in range(2)] + [rng.uniform(3.0, 40.0, n) for _ in range(2)]
    _port(c, f"{portset}:{kbase}:vmk0", *mgmt)
    # the vSAN vmknic carries most of what the uplinks move
    share = rng.uniform(0.85, 0.97)
    _port(c, f"{portset}:{kbase + 1}:vmk1", *(s * share for s in sums))
    for j in range(2):
        world = int(rng.integers(2100000, 2400000))
        vm = [rng.uniform(0.0, 2.0, n) for _ in range(2)] + [rng.uniform(5.0, 300.0, n) for _ in range(2)]
        _port(c, f"{portset}:{kbase + 4 + j}:{world}:vm-{int(rng.integers(1, 60)):02d}", *vm)


def _cpu(c: _Cols, cpu: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    n = c.n
    util = np.minimum(_arr(cpu, "util_pct", n, "cpu"), 100.0)
    npcpu = int(rng.choice([4, 6, 8]))
    room = np.minimum(util, 100.0 - util)[None, :]
    noise = rng.normal(0.0, 1.0, (npcpu, n))
    noise -= noise.mean(axis=0)
    per = np.clip(util[None, :] + noise * np.minimum(room, 12.0), 0.0, 100.0)
    # % Processor Time discounts hyperthread sharing and turbo, so it stays below % Util Time
    ratio = rng.uniform(0.6, 0.85)
    proc = per * ratio * rng.uniform(0.97, 1.03, (npcpu, n))
    for name, rows in (("% Processor Time", proc), ("% Util Time", per)):
        for i in range(npcpu):
            c.add(f"Physical Cpu({i})\\{name}", rows[i])
        c.add(f"Physical Cpu(_Total)\\{name}", rows.mean(axis=0) if rows is proc else util)
    return util


def _groups(c: _Cols, cpu: Mapping[str, np.ndarray], util: np.ndarray, rng: np.random.Generator) -> None:
    n = c.n
    given: dict[str, np.ndarray] = {}
    for key in cpu:
        if key.startswith("ready_pct:"):
            given[key.split(":", 1)[1]] = _arr(cpu, key, n, "cpu")
    taken = {g.split(":", 1)[0] for g in given} | {g.split(":", 1)[-1] for g in given}
    load = 0.5 + util / 200.0
    # contention shows in every group's ready time, not only in the vSAN worlds'
    squeeze = 1.0 + 8.0 * np.clip((util - 85.0) / 15.0, 0.0, 1.0) ** 2
    rows: list[tuple[int, str, float, np.ndarray, np.ndarray]] = []
    for sgid, sname, smembers, base in _SYSTEM_GROUPS:
        if str(sgid) in taken or sname in taken:
            continue
        used = base * load * rng.uniform(0.8, 1.2, n)
        rows.append((sgid, f"{sgid}:{sname}", float(smembers), used, used * rng.uniform(0.05, 0.3) * squeeze))
    for inst, ready in given.items():
        gid_s = inst.split(":", 1)[0]
        gid = int(gid_s) if gid_s.isdigit() else 1 << 40
        used = rng.uniform(4.0, 40.0) * load * rng.uniform(0.9, 1.1, n)
        rows.append((gid, inst, float(rng.integers(6, 48)), used, ready))
    for _, inst, members, used, ready in sorted(rows, key=lambda r: r[0]):
        run = used * rng.uniform(1.03, 1.15)
        vals = (members, used, run, used * 0.01, np.maximum(members * 100.0 - run - ready, 0.0), ready,
                0.0, used * 0.02, 0.0, 0.0, 0.0)  # fmt: skip
        for name, v in zip(_GROUP_CTRS, vals, strict=True):
            c.add(f"Group Cpu({inst})\\{name}", v, integer=name == "Members")


def _memory(c: _Cols, rng: np.random.Generator) -> tuple[list[str], list[np.ndarray]]:
    n = c.n
    machine = float(rng.choice([262144, 393216, 524288, 786432, 1048576]) - rng.integers(200, 900))
    kernel = machine * rng.uniform(0.04, 0.08) + np.cumsum(rng.integers(-2, 3, n))
    free = machine * rng.uniform(0.15, 0.5) + np.cumsum(rng.integers(-8, 9, n))
    names = ["Machine MBytes", "Kernel MBytes", "NonKernel MBytes", "Free MBytes"]
    vals: list[np.ndarray] = [np.full(n, machine), kernel, machine - kernel - free, free]
    share = (0.995, 0.006, 0.4, 0.59, 0.0, 0.02, 0.003, 0.017, 0, 0, 0, 0, 0, 0, 0, 0, 0.65)
    for name, v in zip(_MEM_STATIC, share, strict=True):
        names.append(name)
        vals.append(np.full(n, machine * v))
    return names, vals


def _timestamps(times: np.ndarray, style: str) -> list[str]:
    out = []
    for t in times.tolist():
        g = time.gmtime(int(t))
        if style == "resaved":
            out.append(f"{g.tm_mon}/{g.tm_mday}/{g.tm_year} {g.tm_hour}:{g.tm_min:02d}")
        else:
            out.append(time.strftime("%m/%d/%Y %H:%M:%S", g))
    return out


def render_esxtop(
    capture_host: str,
    times: np.ndarray,
    disks: Mapping[str, Mapping[str, np.ndarray]],
    nics: Mapping[str, Mapping[str, np.ndarray]],
    cpu: Mapping[str, np.ndarray],
    rng: np.random.Generator,
    style: str = "raw",
) -> bytes:
    """One esxtop batch capture as bytes. `style`: raw (as esxtop writes it), resaved (spreadsheet
    re-save: no quotes, CRLF, minute timestamps, short numbers) or stray (raw behind terminal text)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, not {style!r}")
    t = np.asarray(times, dtype=np.float64)
    n = t.shape[0]
    c = _Cols(n)
    mem_names, mem_vals = _memory(c, rng)
    util_probe = np.minimum(_arr(cpu, "util_pct", n, "cpu"), 100.0)
    for span in ("1", "5", "15"):
        c.add(f"Memory\\Memory Overcommit ({span} Minute Avg)", 0.0)
    for span, k in (("1", 0.3), ("5", 0.08), ("15", 0.03)):
        # exponential smoothing, like the kernel's load averages
        acc, out = float(util_probe[0]), np.empty(n)
        for i, u in enumerate(util_probe.tolist()):
            acc += k * (u - acc)
            out[i] = acc / 100.0
        c.add(f"Physical Cpu Load\\Cpu Load ({span} Minute Avg)", out)
    util = _cpu(c, cpu, rng)
    for name, v in zip(mem_names, mem_vals, strict=True):
        c.add(f"Memory\\{name}", v, integer="/sec" not in name)
    c.add("Power\\Power Usage Now Watts", np.rint(180.0 + 2.2 * util + rng.normal(0, 3, n)), integer=True)
    c.add("Power\\Power Usage Cap Watts", 0.0, integer=True)
    c.add("VSAN\\Enabled?", 1.0, integer=True)
    _groups(c, cpu, util, rng)
    _disks(c, disks, rng)
    _network(c, nics, rng)
    for vec in (0x30, 0x38, 0x40, 0xEF):
        rate = rng.uniform(50.0, 4000.0) * (0.4 + util / 100.0) * rng.uniform(0.9, 1.1, n)
        c.add(f"Interrupt Cookie(0x{vec:x})\\Interrupts/second", rate)
        c.add(f"Interrupt Cookie(0x{vec:x})\\Processing Time MicroSec/Interrupt", rng.uniform(0.0, 4.0, n))
        split = rng.dirichlet(np.ones(2))
        for j in range(2):
            c.add(f"Interrupt Cookie(0x{vec:x}:CPU{j})\\Interrupts/second", rate * split[j])

    m = np.empty((len(c.data), n))
    for i, col in enumerate(c.data):
        m[i] = col
    m[np.asarray(c.zero_first, dtype=bool), 0] = 0.0  # esxtop has no previous sample to rate against
    m = np.where(np.asarray(c.integer, dtype=bool)[:, None], np.rint(m), np.round(m, 2)) + 0.0
    rows = m.T.tolist()
    stamps = _timestamps(t, style)
    host = f"\\\\{capture_host}\\"
    if style == "resaved":
        head = _FIRST + "," + ",".join(host + nm for nm in c.names) + "\r\n"
        # a spreadsheet drops trailing zeros (67.20 -> 67.2, 3.00 -> 3): with exactly two decimals in
        # every field, "0," can only be a trailing decimal zero, and ".0," what is left of ".00,"
        fmt = "%.2f," * len(c.names) + "\n"
        num = "".join([fmt % tuple(r) for r in rows]).replace("0,", ",").replace(".0,", ",")
        body = "".join([s + "," + r[:-1] + "\r\n" for s, r in zip(stamps, num.split("\n"), strict=False)])
        return (head + body).encode()
    head = f'"{_FIRST}",' + ",".join(f'"{host}{nm}"' for nm in c.names) + ",\n"
    fmt = '"%s",' + ",".join('"%.0f"' if i else '"%.2f"' for i in c.integer) + ",\n"
    body = "".join([fmt % (s, *r) for s, r in zip(stamps, rows, strict=True)])
    pre = ""
    if style == "stray":
        short = capture_host.split(".", 1)[0]
        delay = max(round(float(np.median(np.diff(t)))), 2) if n > 1 else 5
        cmd = f"[root@{short}:~] esxtop -b -a -d {delay} -n {n} > /tmp/esxtop-{short}.csv"
        lines = [cmd, _STRAY[int(rng.integers(len(_STRAY)))]]
        pre = "\n".join(lines[: int(rng.integers(1, 3))]) + "\n"
    return (pre + head + body).encode()
