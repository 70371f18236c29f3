"""Line sinks shared by the log writer: per-host worlds and CPUs, vmkernel and vobd line buffers,
and the SCSI failure triple (NMP throttle, NMP status, ScsiDeviceIO) ESXi prints for one command."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from data.simulate.events import HostLogContext


class Rand:
    """Uniform draws taken from the generator in blocks: a numpy call per draw would cost more than the
    string building it feeds. Deterministic for a given generator state."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.buf: list[float] = []
        self.i = 0

    def u(self) -> float:
        if self.i == len(self.buf):
            self.buf, self.i = self.rng.random(512).tolist(), 0
        self.i += 1
        return self.buf[self.i - 1]

    def n(self, lo: int, hi: int) -> int:  # [lo, hi)
        return lo + int(self.u() * (hi - lo))

    def pick(self, seq: Sequence[str]) -> str:
        return seq[int(self.u() * len(seq))]

    def hex(self, lo: int, hi: int) -> str:
        return f"0x{self.n(lo, hi):x}"

    def uuid(self) -> str:
        h = "".join(f"{self.n(0, 1 << 32):08x}" for _ in range(4))
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def hexstatus(v: str | int | float) -> str:
    """A status or opcode as ESXi prints it (0x28), whether the model gave a number or a string."""
    return str(v) if isinstance(v, str) else f"0x{int(v):x}"


class LogSink:
    def __init__(self, ctx: HostLogContext, rng: np.random.Generator, start: float, end: float) -> None:
        self.ctx, self.rng = ctx, rng
        self.r = r = Rand(rng)
        self.ncpu = max(ctx.n_cpus, 1)
        # each subsystem logs from a few long-lived worlds, fixed per host for the whole window
        self.worlds = {k: [r.n(2097152, 2200000) for _ in range(3)] for k in ("io", "vsan", "net", "misc")}
        self.boot_ms = int(start * 1000) - r.n(3 * 86400_000, 200 * 86400_000)
        self.end_ms = int(end * 1000)
        self.vobd_pid = r.n(2097600, 2097900)
        self.hba = f"vmhba{r.n(1, 4)}"
        self.vms = [f"vm-{r.n(1, 99):02d}" for _ in range(6)]
        self.devs = ctx.devices or ("naa.5000c500a1b2c3d4",)
        self.kern: list[tuple[int, int, bool, str]] = []
        self.vob: list[tuple[int, int, str, str]] = []
        self.seq = 0

    # ------------------------------------------------------------------------ line sinks
    def k(self, ms: int, msg: str, sub: str = "misc", warn: bool = False, op: bool = False) -> None:
        """A vmkernel line; `op`: logged in an operation's context, so it may carry an `opID=` token."""
        r = self.r
        self.seq += 1
        w = self.worlds[sub][int(r.u() * 3)]
        tag = f" opID={self.opid()}" if op and self.ctx.opid_share and r.u() < self.ctx.opid_share else ""
        self.kern.append((ms, self.seq, warn, f"cpu{int(r.u() * self.ncpu)}:{w}{tag}){msg}"))

    def opid(self) -> str:
        return f"{self.r.n(0, 1 << 32):08x}"

    def v(self, ms: int, corr: str, vid: str, text: str) -> None:
        self.seq += 1
        self.vob.append((ms, self.seq, corr, f"[{vid}] {text}"))

    def v2(self, ms: int, vob: str, esx: str, text: str) -> None:
        """`vob.<vob>` and the `<esx>.<vob>` event raised from it, same text, a moment apart."""
        corr = vob.split(".", 1)[0] + "Correlator"
        self.v(ms, corr, "vob." + vob, text)
        self.v(ms + 1, corr, f"{esx}.{vob}", text)

    def scsi(self, ms: int, dev: str, op: str, hs: str, ds: str, sense: str, warn: bool = False) -> None:
        r = self.r
        cmd, sn = f"0x45{r.n(0x1000000000, 0xFFFFFFFFFF):x}", r.hex(0x1000, 1 << 32)
        world = 0 if r.u() < 0.5 else self.worlds["io"][0]
        status = f"H:{hs} D:{ds} P:0x0"
        if sense and hs == "0x0":
            tail = f"{status} Valid sense data: {sense}"
        else:
            tail = f"{status} Possible sense data: {sense or '0x0 0x0 0x0'}"
        i = self.devs.index(dev) if dev in self.devs else sum(map(ord, dev)) % 16
        to = f'to dev "{dev}"'
        nmp = "NMP: nmp_ThrottleLogForDevice"
        path = f'on path "{self.hba}:C0:T{i}:L0"'
        self.k(ms, f"{nmp}:3893: Cmd {op} ({cmd}, {world}) {to} {path} Failed:", "io")
        act = "NONE" if hs == "0x0" else "EVAL"
        ini = r.hex(0x43 << 40, 0x44 << 40)
        self.k(ms, f"{nmp}:3898: {tail}. Act:{act}. cmdId.initiator={ini} CmdSN {sn}", "io")
        msg = f"ScsiDeviceIO: 4325: Cmd({cmd}) {op}, CmdSN {sn} from world {world} {to} failed {tail}"
        self.k(ms + r.n(0, 2), msg, "io", warn)
