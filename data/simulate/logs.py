"""vmkernel / vmkwarning / vobd writer: prints the model's events the way ESXi 7 and 8 log them.

Every host also logs a steady background of benign chatter (illegal-request sense on feature probes,
rescans, VM power operations, audit VOBs); a fault must show in *what* is logged, never in the mere
presence of lines, so the noise covers the whole window on every host and never borrows a fault's shape.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from data.simulate.events import Event, HostLogContext

__all__ = ["render_host_logs"]

Attrs = Mapping[str, str | int | float]
_BENIGN_SENSE = ("0x5 0x20 0x0", "0x5 0x24 0x0")  # illegal request: opcode / CDB field not supported
_PROBE_OPS = ("0x85", "0x4d", "0x1a", "0x4d", "0x85")  # ATA pass-through (smartd), LOG/MODE SENSE
_DRV_FN = {
    "ixgben": "ixgben_CheckLink",
    "i40en": "i40en_HandleLinkStatusEvent",
    "bnxtnet": "bnxtnet_link_update",
}
_WARN_NOISE = (
    "WARNING: NetDVS: 681: portAlias is NULL",
    "WARNING: UserSocketInet: 2266: python: waiters list not empty!",
    "WARNING: LinuxSocket: 1854: UNKNOWN/UNSUPPORTED socketcall op (whichCall=0x12, args@0xffd8b56c)",
)
_FW_RULES = ("sshServer", "syslog", "CIMHttpServer", "vsanhealth-unicasttest")


class _Rand:
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


def _h(v: str | int | float) -> str:
    """A status or opcode as ESXi prints it (0x28), whether the model gave a number or a string."""
    return str(v) if isinstance(v, str) else f"0x{int(v):x}"


class _Host:
    def __init__(self, ctx: HostLogContext, rng: np.random.Generator, start: float, end: float) -> None:
        self.ctx, self.rng = ctx, rng
        self.r = r = _Rand(rng)
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
    def k(self, ms: int, msg: str, sub: str = "misc", warn: bool = False) -> None:
        r = self.r
        self.seq += 1
        w = self.worlds[sub][int(r.u() * 3)]
        self.kern.append((ms, self.seq, warn, f"cpu{int(r.u() * self.ncpu)}:{w}){msg}"))

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

    # ------------------------------------------------------------------------ events
    def ev_scsi_fail(self, ms: int, a: Attrs) -> None:
        dev, hs, sense = str(a["device"]), _h(a["host_status"]), str(a["sense"]).strip()
        # medium (0x3) and hardware (0x4) errors are logged at warning level, unlike benign probes
        self.scsi(ms, dev, _h(a["opcode"]), hs, _h(a["device_status"]), sense, sense[:4] in ("0x3 ", "0x4 "))
        if hs != "0x0":
            doubt = f'NMP device "{dev}" state in doubt; requested fast path state update...'
            self.k(ms + 1, "WARNING: NMP: nmp_DeviceRequestFastDeviceProbe:237: " + doubt, "io", True)

    def ev_dev_deteriorated(self, ms: int, a: Attrs) -> None:
        avg, now = round(float(a["avg_us"])), round(float(a["now_us"]))
        text = (
            f"Device {a['device']} performance has deteriorated. I/O latency increased from average value of "
            f"{avg} microseconds to {now} microseconds."
        )
        self.k(ms, "WARNING: ScsiDeviceIO: 1513: " + text, "io", True)
        self.v2(ms, "scsi.device.io.latency.high", "esx.problem", text)

    def ev_dev_improved(self, ms: int, a: Attrs) -> None:
        old, new = round(float(a["from_us"])), round(float(a["to_us"]))
        text = (
            f"Device {a['device']} performance has improved. "
            f"I/O latency reduced from {old} microseconds to {new} microseconds."
        )
        self.k(ms, "ScsiDeviceIO: 1493: " + text, "io")
        self.v2(ms, "scsi.device.io.latency.improved", "esx.clear", text)

    def _congestion(self, ms: int, a: Attrs, state: str, thr: int) -> None:
        ct = a["ctype"]
        cur = a["current"]
        text = f"LSOM {ct} Congestion State: {state}. Congestion Threshold: {thr} Current Congestion: {cur}."
        self.k(ms, "LSOM: LSOM_ThrowAsyncCongestionVOB:2127: " + text, "vsan")
        if state == "Exceeded":
            # the async VOB does not name the disk group; the throttle notice that follows it does
            node = f"Virtual SAN node {self.ctx.hostname} maximum {ct} {a['dg_uuid']} congestion reached."
            self.k(ms + self.r.n(1, 40), "LSOM: LSOM_ThrowCongestionVOB:3429: Throttled: " + node, "vsan")
        self.v2(ms, "vsan.lsom.congestionthreshold", "esx.problem" if state == "Exceeded" else "esx.clear", text)

    def ev_lsom_congestion(self, ms: int, a: Attrs) -> None:
        self._congestion(ms, a, "Exceeded", int(a["threshold"]))

    def ev_lsom_congestion_clear(self, ms: int, a: Attrs) -> None:
        self._congestion(ms, a, "Normal", 200)

    def _link(self, ms: int, a: Attrs, up: bool) -> None:
        nic, state = str(a["vmnic"]), "up" if up else "down"
        self.k(ms, f"{nic} : {a['pci']} Link {'Up' if up else 'Down'}", "net")
        if up:
            drv = next((x.driver for x in self.ctx.nics if x.name == nic), "ixgben")
            fn = _DRV_FN.get(drv, drv + "_UpdateLinkStatus")
            speed = f"{a['speed_mbps']} Mbps {a['duplex']} Duplex"
            self.k(ms + 1, f"{drv}: {fn}:1879: {nic}: NIC Link is Up {speed}", "net")
        notify = f"NetSchedHClkNotify:2908: {nic}: link {state} notification"
        self.k(ms + self.r.n(1, 9), "netschedHClk: " + notify, "net")
        self.v(ms, "netCorrelator", f"vob.net.vmnic.linkstate.{state}", f"vmnic {nic} linkstate {state}")
        esx = f"{'esx.clear' if up else 'esx.problem'}.net.vmnic.linkstate.{state}"
        self.v(ms + 1, "netCorrelator", esx, f"Physical NIC {nic} linkstate is {state}")

    def ev_link_down(self, ms: int, a: Attrs) -> None:
        self._link(ms, a, False)

    def ev_link_up(self, ms: int, a: Attrs) -> None:
        self._link(ms, a, True)

    def ev_perm_error(self, ms: int, a: Attrs) -> None:
        uuid = a["disk_uuid"]
        notify = "WARNING: LSOM: LSOMEventNotify:6440: Virtual SAN device"
        self.k(ms, f"{notify} {uuid} is under permanent error.", "vsan", True)
        self.v2(ms, "vsan.lsom.diskerror", "esx.problem.vob", f"vSAN device {uuid} is under permanent error.")

    def ev_disk_offline(self, ms: int, a: Attrs) -> None:
        dev, uuid = a["device"], a["disk_uuid"]
        gone = f"Device {dev} has been removed or is permanently inaccessible."
        self.k(ms, "WARNING: ScsiDevice: 1725: " + gone, "io", True)
        notify = "WARNING: LSOM: LSOMEventNotify:6440: Virtual SAN device"
        self.k(ms + 2, f"{notify} {uuid} has gone offline.", "vsan", True)
        self.v(ms, "scsiCorrelator", "vob.scsi.device.state.permanentloss", gone)
        lost = gone + ' Affected datastores (if any): "Unknown".'
        self.v(ms + 1, "scsiCorrelator", "esx.problem.scsi.device.state.permanentloss", lost)
        self.v2(ms + 2, "vsan.pdl.offline", "esx.problem.vob", f"vSAN device {uuid} has gone offline.")

    def ev_disk_online(self, ms: int, a: Attrs) -> None:
        uuid = a["disk_uuid"]
        self.k(ms, f"LSOM: LSOMEventNotify:6450: Virtual SAN device {uuid} has come online.", "vsan")
        self.v2(ms, "vsan.pdl.online", "esx.clear.vob", f"vSAN device {uuid} has come online.")

    def ev_node_left(self, ms: int, a: Attrs) -> None:
        node = a["node_uuid"]
        self.k(ms, f"CMMDS: CMMDSStateDestroyNode:708: Destroying node {node}: Heartbeat timeout", "vsan")
        member = f"Removing node {node} from the cluster membership"
        self.k(ms + 3, "CMMDS: MasterRemoveNodeFromMembership:5765: " + member, "vsan")

    def ev_node_joined(self, ms: int, a: Attrs) -> None:
        member = f"Adding node {a['node_uuid']} to the cluster membership"
        self.k(ms, "CMMDS: MasterAddNodeToMembership:5586: " + member, "vsan")

    def ev_resync_start(self, ms: int, a: Attrs) -> None:
        work = f"Resync of {a['objects']} objects scheduled, {a['bytes_to_sync']} bytes to sync"
        self.k(ms, "DOM: DOMResyncMgrScheduleWork:1843: " + work, "vsan")

    # ------------------------------------------------------------------------ benign noise
    def n_probe(self, ms: int) -> None:
        r = self.r
        self.scsi(ms, r.pick(self.devs), r.pick(_PROBE_OPS), "0x0", "0x2", r.pick(_BENIGN_SENSE))

    def n_rescan(self, ms: int) -> None:
        for i, dev in enumerate(self.devs):
            self.k(ms + i, f"ScsiDeviceIO: 9425: QErr is correctly set to 0x0 for device {dev}.", "io")
            sitpua = f"Could not detect setting of sitpua for device {dev}. Error Not supported."
            self.k(ms + i, "ScsiDeviceIO: 8970: " + sitpua, "io")
            self.k(ms + i + 1, f"Vol3: 1201: Could not open device '{dev}:2' for volume open: Not supported")
            fss = f"No FS driver claimed device '{dev}:2': No filesystem on the device"
            self.k(ms + i + 1, "FSS: 6092: " + fss)

    def n_vm(self, ms: int) -> None:
        r = self.r
        h, w, port = f"handle {r.n(8192, 8250)}(vscsi0:0)", r.n(2100000, 2400000), r.n(0x2000004, 0x2000040)
        later = ms + r.n(5, 400)
        if r.u() < 0.5:
            blocks = f"(FSS handle {r.n(100000, 9999999)}) numBlocks={r.n(2, 80) * 2097152} (bs=512)"
            self.k(ms, f"VSCSI: 4068: {h}:Creating Virtual Device for world {w} {blocks}")
            mac = ":".join(f"{r.n(0, 256):02x}" for _ in range(3))
            self.k(later, f"NetPort: 1359: enabled port 0x{port:x} with mac 00:50:56:{mac}", "net")
        else:
            self.k(ms, f"NetPort: 1580: disabled port 0x{port:x}", "net")
            self.k(later, f"VSCSI: 6602: {h}:Destroying Device for world {w} (pendCom 0)")

    def n_misc(self, ms: int) -> None:
        r, ctx = self.r, self.ctx
        c = int(r.u() * 6)
        if c == 0:
            port = f"port 0x{r.n(0x2000004, 0x2000040):x}, disallowed by vswitch policy"
            who = f"client {r.pick(self.vms)} requested promiscuous mode on {port}"
            self.k(ms, "etherswitch: L2Sec_EnforcePortCompliance:247: " + who, "net")
        elif c == 1:
            aff = f"Affinitizing {self.worlds['net'][1]} to world {r.n(2100000, 2400000)}, Success"
            self.k(ms, "Tcpip_Vmk: 1059: " + aff, "net")
        elif c == 2 and ctx.peer_uuids:
            entry = f"Entry type HOSTNAME owner {r.pick(ctx.peer_uuids)} updated to revision {r.n(2, 900)}"
            self.k(ms, "CMMDS: CMMDSUpdateEntryRevision:912: " + entry, "vsan")
        elif c == 3 and ctx.disk_uuids:
            disk = f"Disk {r.pick(ctx.disk_uuids)}: reclaimed {r.n(1, 4000)} metadata blocks"
            self.k(ms, "LSOM: LSOMMetadataCleanupPass:1520: " + disk, "vsan")
        elif c == 4:
            obj = f"Opened object {r.uuid()} (owner {ctx.host_uuid})"
            self.k(ms, "DOM: DOMOwnerObjectOpen:3124: " + obj, "vsan")
        else:
            lun = f"the max LUN supported by this adapter is {r.n(1, 2)}"
            self.k(ms, "vmw_ahci[0000001f]: scsiDiscover:" + lun, "io")

    def n_warn(self, ms: int) -> None:
        self.k(ms, self.r.pick(_WARN_NOISE), "misc", True)

    def n_vob(self, ms: int) -> None:
        r, corr = self.r, "UserLevelCorrelator"
        if r.u() < 0.6:
            who = f"root@10.{r.n(0, 255)}.{r.n(0, 255)}.{r.n(2, 254)}"
            self.v(ms, corr, "esx.audit.ssh.session.opened", f"SSH session was opened for '{who}'.")
            closed = min(ms + r.n(20_000, 900_000), max(self.end_ms, ms + 1))
            self.v(closed, corr, "esx.audit.ssh.session.closed", f"SSH session was closed for '{who}'.")
        else:
            op = f"Operation '{r.pick(('enable', 'disable'))}' for rule set {r.pick(_FW_RULES)} succeeded."
            self.v(ms, corr, "esx.audit.net.firewall.config.changed", "Firewall configuration has changed. " + op)

    def noise(self, start: float, end: float) -> None:
        u = self.r.u
        # rates per hour differ from host to host
        kinds: list[tuple[float, Callable[[int], None]]] = [
            (u() * 14 + 3, self.n_probe), (u() * 0.6 + 0.1, self.n_rescan), (u() * 6 + 1, self.n_vm),
            (u() * 10 + 2, self.n_misc), (u() * 3 + 0.5, self.n_warn), (u() * 5 + 1, self.n_vob),
        ]  # fmt: skip
        hours = max(end - start, 0.0) / 3600.0
        for per_hour, fn in kinds:
            n = int(self.rng.poisson(per_hour * hours))
            for t in np.sort(self.rng.uniform(start, end, n)).tolist():
                fn(int(t * 1000))


def _files(name: str, lines: list[str], r: _Rand, p_rotate: float) -> dict[str, bytes]:
    """`<name>.log`, and when the window spans a rotation the older part in `<name>.0.gz` (older still in
    `.1.gz`); gzip with mtime 0 so the bytes depend on the content only."""
    base = "var/run/log/" + name
    n_rot = (1 + (r.u() < 0.25)) if r.u() < p_rotate and len(lines) >= 6 else 0
    cuts = sorted({r.n(1, len(lines) - 1) for _ in range(n_rot)})
    parts = [lines[a:b] for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True)]
    out = {base + ".log": "".join(parts[-1]).encode()}
    for i, part in enumerate(reversed(parts[:-1])):
        out[f"{base}.{i}.gz"] = gzip.compress("".join(part).encode(), compresslevel=6, mtime=0)
    return out


def render_host_logs(
    ctx: HostLogContext, events: Sequence[Event], start: float, end: float, rng: np.random.Generator
) -> dict[str, bytes]:
    """vmkernel.log, vmkwarning.log and vobd.log (sometimes with rotated `.N.gz` copies) of one host for
    the window [start, end], keyed by path relative to the host folder."""
    h = _Host(ctx, rng, start, end)
    h.noise(start, end)
    for ev in events:
        getattr(h, "ev_" + ev.kind)(int(ev.t * 1000), ev.attrs)
    heads: dict[int, str] = {}

    def ts(ms: int) -> str:
        s = ms // 1000
        head = heads.get(s)
        if head is None:
            head = heads[s] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s))
        return f"{head}.{ms % 1000:03d}Z"

    kern, vob, up = sorted(h.kern), [], 0
    for ms, _, corr, rest in sorted(h.vob):
        # vobd stamps its own uptime in microseconds, strictly increasing
        up = max(up + h.r.n(40, 400), (ms - h.boot_ms) * 1000 + h.r.n(0, 1000))
        vob.append((ms, f"[{corr}] {up}us: {rest}"))
    if ctx.esxi_major >= 8:
        vmk = [f"{ts(ms)} {'Wa(180)' if w else 'In(182)'} vmkernel: {b}\n" for ms, _, w, b in kern]
        warn = [f"{ts(ms)} Wa(180) vmkwarning: {b}\n" for ms, _, w, b in kern if w]
        vobd = [f"{ts(ms)} In(14) vobd[{h.vobd_pid}]: {b}\n" for ms, b in vob]
    else:
        vmk = [f"{ts(ms)} {b}\n" for ms, _, _, b in kern]
        warn = [f"{ts(ms)} {b}\n" for ms, _, w, b in kern if w]
        vobd = [f"{ts(ms)}: {b}\n" for ms, b in vob]
    out = _files("vmkernel", vmk, h.r, 0.35)
    out.update(_files("vmkwarning", warn, h.r, 0.1))
    out.update(_files("vobd", vobd, h.r, 0.2))
    return out
