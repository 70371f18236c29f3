"""vmkernel / vmkwarning / vobd logs of one host: the faults' events on top of ordinary background chatter."""

from __future__ import annotations

import datetime as dt
import gzip

import numpy as np

from data.cleanroom.model import Event
from data.cleanroom.scenario import Timeline
from data.cleanroom.topology import Cluster, Rng

BACKGROUND = (
    "World: 12231: VC opID {op} maps to vmkernel opID {op2}",
    "VSCSI: 6602: handle {hd}(vscsi0:0):Destroying Device for world {w} (pendCom 0)",
    "NetPort: 1580: disabled port 0x{port:x}",
    "Tcpip_Vmk: 1201: Affinitizing {ip} to world {w}, Success",
    "VSCSI: 3810: handle {hd}(vscsi0:1):Creating Virtual Device for world {w} (FSS handle {fss})",
    "Vol3: 2128: Could not open device '{dev}:1' for probing: No such target on adapter",
    "HBX: 4968: Reclaimed heartbeat for volume {vol} (datastore1): [Timeout] Offset 3444736",
    "CMMDS: CMMDSHeartbeatCheck:1077: Heartbeat interval stats: min 1000 max 1004 (ms)",
    "DOM: DOMOwner_SetLivenessState:8321: Object {obj} lost liveness [0x45bb2b3e3c40]",
    "VSAN: VsanIoctlCtrlNode:3016: {obj}: RPC to DOM returned: Success",
    "Net: 2348: connected {vm} eth0 to VM Network, portID 0x{port:x}",
)
VOB_BACKGROUND = (
    "[esx.audit.ssh.session.opened] SSH session was opened for 'root@{ip}'.",
    "[esx.audit.ssh.session.closed] SSH session was closed for 'root@{ip}'.",
    "[esx.audit.account.loginsuccess] Successful login of root from {ip} via SSH",
)


class HostLog:
    def __init__(self, rng: Rng, cl: Cluster, tl: Timeline, host: int) -> None:
        self.rng, self.cl, self.tl, self.h = rng, cl, tl, host
        self.esxi8 = cl.esxi8
        self.vmk: list[tuple[float, str]] = []
        self.warn: list[tuple[float, str]] = []
        self.vob: list[tuple[float, str]] = []
        self.uptime = float(rng.uniform(2e5, 9e6))  # seconds since boot at the first sample

    def _ts(self, t: float) -> str:
        when = self.tl.start + dt.timedelta(seconds=t)
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int((t % 1) * 1000):03d}Z"

    def _pre(self) -> str:
        return f"cpu{int(self.rng.integers(0, 48))}:{int(self.rng.integers(2097152, 2130000))})"

    def kern(self, t: float, msg: str, warning: bool = False) -> None:
        body = self._pre() + ("WARNING: " + msg if warning else msg)
        if self.esxi8:
            sev = "Wa(180)" if warning else "In(182)"
            self.vmk.append((t, f"{self._ts(t)} {sev} vmkernel: {body}"))
            if warning:
                self.warn.append((t, f"{self._ts(t)} Wa(180) vmkwarning: {body}"))
        else:
            self.vmk.append((t, f"{self._ts(t)} {body}"))
            if warning:
                self.warn.append((t, f"{self._ts(t)} {body}"))

    def vobd(self, t: float, corr: str, text: str) -> None:
        up = int((self.uptime + t) * 1e6)
        self.vob.append((t, f"{self._ts(t)}: [{corr}] {up}us: {text}"))

    def background(self, t0: float, t1: float) -> None:
        rng = self.rng
        k = int(rng.poisson((t1 - t0) / 3600.0 * rng.uniform(10, 40)))
        devs = [d.dev for d in self.cl.disks() if d.host == self.h]
        for t in np.sort(rng.uniform(t0, t1, k)):
            tpl = str(rng.choice(BACKGROUND))
            self.kern(float(t), tpl.format(**self._fill(devs)))
        for t in np.sort(rng.uniform(t0, t1, int(rng.poisson((t1 - t0) / 3600.0 * 0.8)))):
            self.vobd(float(t), "UserLevelCorrelator", str(rng.choice(VOB_BACKGROUND)).format(**self._fill(devs)))

    def _fill(self, devs: list[str]) -> dict[str, object]:
        rng = self.rng
        hx = "".join(f"{b:02x}" for b in rng.integers(0, 256, 4))
        return {
            "op": f"{hx}-{int(rng.integers(1, 999)):08d}",
            "op2": hx,
            "hd": int(rng.integers(8192, 9000)),
            "w": int(rng.integers(2099000, 2200000)),
            "port": int(rng.integers(0x2000000, 0x4000000)),
            "ip": f"10.{int(rng.integers(0, 255))}.{int(rng.integers(0, 255))}.{int(rng.integers(2, 250))}",
            "fss": int(rng.integers(100000, 999999)),
            "dev": "mpx.vmhba32:C0:T0:L0",
            "vol": f"{hx}-5e1d{hx[:4]}-0a1b-{hx}0025",
            "obj": f"{hx}-{hx[:4]}-{hx[4:]}-0000-{hx}{hx[:4]}",
            "vm": f"vm-{int(rng.integers(1, 99)):02d}",
        }

    def event(self, e: Event) -> None:
        rng, i = self.rng, e.info
        if e.kind == "scsi":
            cmd = f"0x45{''.join(f'{b:02x}' for b in rng.integers(0, 256, 5))}"
            status = f"H:{i['h']} D:{i['d']} P:0x0"
            sense = f"Valid sense data: {i['sense']}" if i["d"] == "0x2" else "Invalid sense data: 0x0 0x0 0x0"
            act = "NONE" if i["d"] == "0x2" else "EVAL"
            self.kern(
                e.t - 0.001,
                f"NMP: nmp_ThrottleLogForDevice:3893: Cmd {i['op']} ({cmd}, {int(rng.integers(2097152, 2130000))}) "
                f'to dev "{i["dev"]}" on path "{i["path"]}" Failed: {status} {sense}. Act:{act}',
            )
            sn = f"0x{int(rng.integers(1 << 20, 1 << 31)):x}"
            self.kern(
                e.t,
                f'ScsiDeviceIO: 4325: Cmd({cmd}) {i["op"]}, CmdSN {sn} from world 0 to dev "{i["dev"]}" '
                f"failed {status} {sense}",
            )
        elif e.kind == "deteriorated":
            msg = (
                f"Device {i['dev']} performance has deteriorated. I/O latency increased from average value of "
                f"{i['from']} microseconds to {i['to']} microseconds."
            )
            self.kern(e.t, "ScsiDeviceIO: 1513: " + msg, warning=True)
            self.vobd(e.t + 0.002, "scsiCorrelator", f"[esx.problem.scsi.device.io.latency.high] {msg}")
        elif e.kind == "improved":
            msg = (
                f"Device {i['dev']} performance has improved. I/O latency reduced from {i['from']} microseconds "
                f"to {i['to']} microseconds."
            )
            self.kern(e.t, "ScsiDeviceIO: 1488: " + msg)
            self.vobd(e.t + 0.002, "scsiCorrelator", f"[esx.clear.scsi.device.io.latency.improved] {msg}")
        elif e.kind in ("link_down", "link_up"):
            up = e.kind == "link_up"
            self.kern(e.t, f"{i['nic']} : {i['pci']} Link {'Up' if up else 'Down'}")
            word = "up" if up else "down"
            if up:
                self.kern(
                    e.t + 0.01, f"{i['nic']}: link up, speed {i['speed']} Mbps, {str(i['duplex']).lower()} duplex"
                )
            self.vobd(e.t, "netCorrelator", f"[vob.net.vmnic.linkstate.{word}] vmnic {i['nic']} linkstate {word}")
            trans = f"Uplink: {i['nic']} is {word}. Affected portgroup: vSAN. 1 uplinks up"
            self.vobd(e.t + 0.05, "netCorrelator", f"[vob.net.pg.uplink.transition.{word}] {trans}")
            if not up:
                lost = f'Lost uplink redundancy on virtual switch "vSwitch1". Physical NIC {i["nic"]} is down.'
                self.vobd(
                    e.t + 1.5, "netCorrelator", f'[esx.problem.net.redundancy.lost] {lost} Affected port groups: "vSAN"'
                )
        elif e.kind == "perm_error":
            d = self.cl.disks()[int(str(i["disk"]))]
            self.kern(e.t, f"LSOM: LSOMLogDiskEvent:7513: Disk Event permanent error for MD {d.uuid} ({d.dev}:2)")
            perm = f"Virtual SAN device {d.uuid} is under permanent error."
            self.kern(e.t + 0.01, f"LSOM: LSOMEventNotify:6440: {perm}", warning=True)
            self.vobd(
                e.t + 0.02,
                "vsanCorrelator",
                f"[esx.problem.vob.vsan.lsom.diskerror] vSAN device {d.uuid} is under permanent error.",
            )
        elif e.kind == "host_boot":
            self.uptime = -e.t + 60.0
            self.kern(e.t, "Boot Session ID: " + "".join(f"{b:02x}" for b in rng.integers(0, 256, 8)))
            self.vobd(e.t + 55, "UserLevelCorrelator", "[esx.audit.host.boot] Host has booted.")
        elif e.kind == "peer_down":
            self.kern(e.t, f"CMMDS: CMMDSNodeLeft:2216: Node {i['uuid']} left the cluster: heartbeat timeout")
        elif e.kind == "congestion":
            uuid, cur, state = i["uuid"], i["value"], i["state"]
            kind = str(i["which"])
            tail = f"Congestion State: {state}. Congestion Threshold: 200 Current Congestion: {cur}."
            if rng.random() < 0.5:
                msg = f"LSOM: LSOM_ThrowAsyncCongestionVOB:550: LSOM {kind} {tail}"
            else:
                short = "SSDCong" if kind == "SSD" else "LogCong"
                msg = f"LSOM: LSOMThrowAsyncCongestionVOB:550: LSOM {short} in {uuid} {tail}"
            self.kern(e.t, msg)
            if state == "Exceeded":
                vob = "[esx.problem.vsan.lsom.congestionthreshold]"
                self.vobd(e.t + 0.01, "vsanCorrelator", f"{vob} LSOM {kind} {uuid} {tail}")

    def files(self, rotate: bool) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for name, lines in (("vmkernel", self.vmk), ("vmkwarning", self.warn), ("vobd", self.vob)):
            lines.sort(key=lambda x: x[0])
            text = [s for _, s in lines]
            if rotate and name == "vmkernel" and len(text) > 20:
                cut = len(text) // 3
                old = ("\n".join(text[:cut]) + "\n").encode()
                out[f"var/run/log/{name}.0.gz"] = gzip.compress(old, mtime=0)
                text = text[cut:]
            out[f"var/run/log/{name}.log"] = ("\n".join(text) + "\n" if text else "").encode()
        return out
