"""vmkernel / vmkwarning / vobd writer: prints the model's events the way ESXi 7 and 8 log them.

Every host also logs a steady background of benign chatter (illegal-request sense on feature probes,
rescans, VM power operations, audit VOBs); a fault must show in *what* is logged, never in the mere
presence of lines, so the noise covers the whole window on every host and never borrows a fault's shape.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Mapping, Sequence

import numpy as np

from data.simulate.events import Event, HostLogContext
from data.simulate.lognoise import NoisyHost
from data.simulate.logsink import Rand, hexstatus

__all__ = ["render_host_logs"]

Attrs = Mapping[str, str | int | float]
_DRV_FN = {
    "ixgben": "ixgben_CheckLink",
    "i40en": "i40en_HandleLinkStatusEvent",
    "bnxtnet": "bnxtnet_link_update",
}


class _Host(NoisyHost):
    """Prints the model's events; the sinks and the benign background come from the bases."""

    def ev_scsi_fail(self, ms: int, a: Attrs) -> None:
        dev, hs, sense = str(a["device"]), hexstatus(a["host_status"]), str(a["sense"]).strip()
        # medium (0x3) and hardware (0x4) errors are logged at warning level, unlike benign probes
        self.scsi(
            ms, dev, hexstatus(a["opcode"]), hs, hexstatus(a["device_status"]), sense, sense[:4] in ("0x3 ", "0x4 ")
        )
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
        style = self.ctx.flap_style
        if style in ("uplink", "both"):
            self._uplink_vobs(ms, nic, up)
        if style != "uplink":
            self.v(ms, "netCorrelator", f"vob.net.vmnic.linkstate.{state}", f"vmnic {nic} linkstate {state}")
        if style == "classic":
            esx = f"{'esx.clear' if up else 'esx.problem'}.net.vmnic.linkstate.{state}"
            self.v(ms + 1, "netCorrelator", esx, f"Physical NIC {nic} linkstate is {state}")

    def _uplink_vobs(self, ms: int, nic: str, up: bool) -> None:
        """vobd as a real ESXi uplink flap (shared/samples/real/logs/vobd_uplink_down_up.log): the portgroup
        transition, the link state, then lost/restored redundancy or connectivity of the virtual switch."""
        ctx, corr, state = self.ctx, "netCorrelator", "up" if up else "down"
        vsan = nic in (ctx.vsan_nic, ctx.standby_nic) and bool(ctx.vsan_nic)
        pg = ctx.portgroup if vsan else self.r.pick(("Management Network", "VM Network"))
        sw = ctx.vswitch if vsan else "vSwitch0"
        left = int(bool(ctx.standby_nic)) if vsan else 1
        if up:
            self.v(ms, corr, "vob.net.vmnic.linkstate.up", f"vmnic {nic} linkstate up")
            self.v(ms + self.r.n(50, 200), corr, "vob.net.pg.uplink.transition.up",
                   f"Uplink:{nic} is up. Affected portgroup: {pg}. {left + 1} uplinks up")  # fmt: skip
            what = "connectivity restored" if not left or self.r.u() < 0.5 else "redundancy restored"
            vid = f"esx.clear.net.{what.split()[0]}.restored"
            text = f'Network {what} on virtual switch "{sw}", portgroups: "{pg}". Physical NIC {nic} is up'
            if what.startswith("redundancy"):
                text = f'Uplink redundancy restored on virtual switch "{sw}". Physical NIC {nic} is up. ' \
                       f'Affected port groups: "{pg}"'  # fmt: skip
            self.v(ms + self.r.n(1000, 2500), corr, vid, text)
            return
        down = f"Uplink: {nic} is {state}. Affected portgroup: {pg}. {left} uplinks up. Failed criteria: 128"
        self.v(ms, corr, "vob.net.pg.uplink.transition.down", down)
        self.v(ms + 1, corr, "vob.net.vmnic.linkstate.down", f"vmnic {nic} linkstate down")
        if left:
            vid, lost = "esx.problem.net.redundancy.lost", f'Lost uplink redundancy on virtual switch "{sw}".'
        else:
            vid, lost = "esx.problem.net.connectivity.lost", f'Lost network connectivity on virtual switch "{sw}".'
        text = f'{lost} Physical NIC {nic} is down. Affected port groups: "{pg}"'
        self.v(ms + self.r.n(1000, 2500), corr, vid, text)

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


def _files(name: str, lines: list[str], r: Rand, p_rotate: float) -> dict[str, bytes]:
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
