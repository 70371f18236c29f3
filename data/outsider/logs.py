"""vmkernel / vmkwarning / vobd logs: routine noise plus what each fault's cause would print."""

from __future__ import annotations

import datetime as dt

import numpy as np
from numpy.typing import NDArray

from data.outsider.counters import Counters
from data.outsider.layout import Host, Rng, hexs
from data.outsider.scenario import Scenario

F = NDArray[np.float64]
Lines = dict[str, list[tuple[float, str]]]  # file -> (seconds from window start, text without timestamp)


class Log:
    def __init__(self, rng: Rng, sc: Scenario) -> None:
        self.rng, self.sc = rng, sc
        self.files: dict[int, Lines] = {
            h: {"vmkernel": [], "vmkwarning": [], "vobd": []} for h in range(len(sc.cluster.hosts))
        }
        self.boot = {h: float(rng.uniform(3e5, 4e7)) for h in self.files}

    def kern(self, h: int, t: float, msg: str, warn: bool = False) -> None:
        cpu, world = int(self.rng.integers(0, 48)), int(self.rng.integers(2097152, 2130000))
        body = f"cpu{cpu}:{world})" + ("WARNING: " if warn else "") + msg
        sev = "Wa(180)" if warn else "In(182)"
        self.files[h]["vmkernel"].append((t, f"{sev} vmkernel: {body}" if self.sc.cluster.esx8 else body))
        if warn:
            self.files[h]["vmkwarning"].append((t, f"Wa(180) vmkwarning: {body}" if self.sc.cluster.esx8 else body))

    def vob(self, h: int, t: float, corr: str, vid: str, text: str) -> None:
        up = int((self.boot[h] + t) * 1e6)
        pre = f"In(14) vobd[{2097600 + h * 7}]:  " if self.sc.cluster.esx8 else ""
        self.files[h]["vobd"].append((t, f"{pre}[{corr}] {up}us: [{vid}] {text}"))

    def render(self, h: int, name: str, start: dt.datetime) -> str:
        out = []
        for t, s in sorted(self.files[h][name], key=lambda x: x[0]):
            ts = start + dt.timedelta(seconds=t)
            sep = ": " if name == "vobd" and not self.sc.cluster.esx8 else " "
            out.append(ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z{sep}{s}")
        return "\n".join(out) + ("\n" if out else "")


def scsi_fail(rng: Rng, dev: str, hdp: str, sense: str) -> str:
    op = str(rng.choice(["0x28", "0x2a", "0x89", "0x8a"]))
    return (
        f"ScsiDeviceIO: 4325: Cmd(0x45{hexs(rng, 10)}) {op}, CmdSN 0x{hexs(rng, 6)} from world "
        f"{int(rng.integers(0, 2110000))} "
        f'to dev "{dev}" failed {hdp} {sense}'
    )


def noise(lg: Log, h: int, host: Host, span: float) -> None:
    rng = lg.rng
    n = int(rng.integers(5, 60))
    devs = [d.dev for d in host.disks]
    for _ in range(n):
        t = float(rng.uniform(-600, span))
        k = int(rng.integers(0, 8))
        dev = str(rng.choice(devs))
        if k == 0:
            lg.kern(
                h,
                t,
                scsi_fail(rng, dev, "H:0x0 D:0x2 P:0x0", "Valid sense data: 0x5 0x20 0x0.")
                .replace("0x28,", "0x85,")
                .replace("0x2a,", "0x85,")
                .replace("0x89,", "0x85,")
                .replace("0x8a,", "0x85,"),
            )
        elif k == 1:
            lg.kern(
                h,
                t,
                f"NMP: nmp_ResetDeviceLogThrottling:3835: last error status from device {dev} repeated "
                f"{int(rng.integers(2, 80))} times",
            )
        elif k == 2:
            lg.kern(h, t, f"World: 12231: VC opID {hexs(rng, 8)} maps to vmkernel opID {hexs(rng, 8)}")
        elif k == 3:
            lg.kern(
                h,
                t,
                f"VSCSI: 6620: handle {int(rng.integers(8192, 9000))}(vscsi0:{int(rng.integers(0, 4))}):"
                f"Destroying Device for world {int(rng.integers(2100000, 2140000))} (pendCom 0)",
            )
        elif k == 4:
            lg.kern(
                h,
                t,
                f"VSCSIFs: 4390: handle {int(rng.integers(10**15, 10**16))}(GID:{int(rng.integers(8000, 9000))})"
                f"(vscsi0:2):Invalid Opcode (0xa3) from (vmm0:vm{int(rng.integers(1, 60)):02d})",
            )
        elif k == 5:
            a = int(rng.integers(900, 3000))
            lg.kern(
                h,
                t,
                f"ScsiDeviceIO: 1513: Device mpx.vmhba32:C0:T0:L0 performance has deteriorated. I/O latency "
                f"increased from average value of {a} microseconds to {a * int(rng.integers(30, 90))} microseconds.",
                warn=True,
            )
        elif k == 6:
            lg.kern(h, t, f"NetqueueBal: 5032: {host.nics[0].name}: device Up notification, reset logical space needed")
        else:
            lg.kern(
                h,
                t,
                f"Tcpip_Vmk: 1096: arpresolve: can't allocate llinfo for "
                f"169.254.{int(rng.integers(0, 255))}.{int(rng.integers(1, 255))}",
            )
    if rng.random() < 0.3:  # a flap of a port that does not carry vSAN
        other = [n for n in host.nics if n.role in ("mgmt", "unused", "vm", "vmotion")]
        if other:
            nic = other[int(rng.integers(len(other)))]
            t = float(rng.uniform(0, span))
            link_flap(lg, h, nic.name, nic.pci, t, float(rng.uniform(2, 30)))


def link_flap(lg: Log, h: int, nic: str, pci: str, t: float, down_s: float) -> None:
    lg.kern(h, t, f"{nic} : {pci} Link Down")
    lg.vob(h, t + 0.001, "netCorrelator", "vob.net.vmnic.linkstate.down", f"vmnic {nic} linkstate down")
    lg.vob(
        h,
        t + 1.5,
        "netCorrelator",
        "esx.problem.net.redundancy.lost",
        f'Lost uplink redundancy on virtual switch "{lg.sc.cluster.portset}". Physical NIC {nic} is down.',
    )
    lg.kern(h, t + down_s, f"{nic} : {pci} Link Up")
    lg.vob(h, t + down_s + 0.002, "netCorrelator", "vob.net.vmnic.linkstate.up", f"vmnic {nic} linkstate up")
    lg.vob(
        h,
        t + down_s + 1.6,
        "netCorrelator",
        "esx.clear.net.redundancy.restored",
        f'Uplink redundancy restored on virtual switch "{lg.sc.cluster.portset}". Physical NIC {nic} is up.',
    )


def faults(lg: Log, c: Counters) -> None:
    rng, sc = lg.rng, lg.sc
    dt_s = float(sc.interval)
    for f in sc.faults:
        if f.fault == "disk.latency":
            g = sc.cluster.hosts[f.host].dgs[f.dg]
            d = g.cache if f.disk < 0 else g.caps[f.disk]
            davg = c.disk_lat[d.uuid][0]
            avg = float(np.median(davg[: max(1, f.onset)])) if f.onset > 0 else float(rng.uniform(150, 600))
            n_err = int(3 + 60 * f.sev)
            bad = np.flatnonzero(davg > 4 * avg)
            if bad.size == 0:
                bad = np.arange(f.onset, f.end)
            for _ in range(n_err):
                i = int(rng.choice(bad))
                t = (i + float(rng.random())) * dt_s
                if f.cause == "media_errors":
                    sense = str(rng.choice(["0x3 0x11 0x0", "0x3 0x11 0x0", "0x4 0x44 0x0", "0x3 0x0 0x0"]))
                    lg.kern(f.host, t, scsi_fail(rng, d.dev, "H:0x0 D:0x2 P:0x0", f"Valid sense data: {sense}."))
                elif f.cause == "firmware_stalls":
                    hd = str(rng.choice(["H:0x5 D:0x0 P:0x0", "H:0x8 D:0x0 P:0x0", "H:0x5 D:0x0 P:0x0"]))
                    lg.kern(f.host, t, scsi_fail(rng, d.dev, hd, "Invalid sense data: 0x0 0x0 0x0."))
                else:
                    hd = str(rng.choice(["H:0x0 D:0x28 P:0x0", "H:0x0 D:0x8 P:0x0"]))
                    lg.kern(f.host, t, scsi_fail(rng, d.dev, hd, "Invalid sense data: 0x0 0x0 0x0."))
            prev = avg
            for i in bad[:: max(1, bad.size // int(2 + 8 * f.sev))].tolist():
                cur = float(davg[i])
                if cur < 8 * prev and f.sev < 0.2:
                    continue
                t = (i + float(rng.random())) * dt_s
                msg = (
                    f"Device {d.dev} performance has deteriorated. I/O latency increased from average value of "
                    f"{int(prev)} microseconds to {int(cur)} microseconds."
                )
                lg.kern(f.host, t, "ScsiDeviceIO: 1513: " + msg, warn=True)
                lg.vob(f.host, t + 0.01, "scsiCorrelator", "esx.problem.scsi.device.io.latency.high", msg)
                prev = max(prev, cur * 0.3)
        elif f.fault == "dg.write_buffer" and c.cong is not None:
            gi = [(h, g) for h, hh in enumerate(sc.cluster.hosts) for g in range(len(hh.dgs))].index((f.host, f.dg))
            cg = c.cong[gi]
            cache = sc.cluster.hosts[f.host].dgs[f.dg].cache
            above = False
            for i in range(len(cg)):
                if not above and cg[i] > 200:
                    t = (i + float(rng.random())) * dt_s
                    lg.kern(
                        f.host,
                        t,
                        f"LSOM: LSOM_ThrowAsyncCongestionVOB:{int(rng.integers(1000, 9999))}: LSOM SSD "
                        f"Congestion State: Exceeded. Congestion Threshold: 200 Current Congestion: {int(cg[i])}.",
                    )
                    lg.vob(
                        f.host,
                        t + 0.01,
                        "LSOMCorrelator",
                        "esx.problem.vsan.lsom.congestionthreshold",
                        f"LSOM SSD {cache.uuid} Congestion State: Exceeded. Congestion Threshold: 200 Current "
                        f"Congestion: {int(cg[i])}.",
                    )
                    above = True
                elif above and cg[i] < 150:
                    t = (i + float(rng.random())) * dt_s
                    lg.kern(
                        f.host,
                        t,
                        f"LSOM: LSOM_ThrowAsyncCongestionVOB:{int(rng.integers(1000, 9999))}: LSOM SSD "
                        f"Congestion State: Normal. Congestion Threshold: 200 Current Congestion: {int(cg[i])}.",
                    )
                    above = False
        elif f.fault == "net.link_degraded":
            nic = sc.cluster.hosts[f.host].nics[f.nic]
            t = (f.onset - float(rng.uniform(0.05, 0.9))) * dt_s if f.onset > 0 else -float(rng.uniform(60, 3000))
            link_flap(lg, f.host, nic.name, nic.pci, t, float(rng.uniform(2, 9)))
            lg.kern(
                f.host,
                t + 9.5,
                f"{nic.driver}: {nic.name}: link up, speed {nic.speed} Mbps, {nic.duplex.lower()} duplex",
            )
        elif f.fault == "net.packet_loss" and f.cause == "bad_optic" and rng.random() < 0.4:
            nic = sc.cluster.hosts[f.host].nics[f.nic]
            for _ in range(int(rng.integers(1, 4))):
                link_flap(
                    lg, f.host, nic.name, nic.pci, float(rng.uniform(f.onset, sc.T)) * dt_s, float(rng.uniform(0.5, 3))
                )
        elif f.fault == "cluster.resync":
            resync_events(lg, f.cause, f.onset * dt_s, f.params)


def resync_events(lg: Log, cause: str, t0: float, params: dict[str, float]) -> None:
    rng, hosts = lg.rng, lg.sc.cluster.hosts
    t = t0 - float(rng.uniform(120, 3600 * 1.1))
    if cause == "host_reboot":
        d = int(params.get("dst", 0))
        lg.vob(d, t, "UserLevelCorrelator", "esx.audit.host.boot", "Host has booted.")
        for h in range(len(hosts)):
            if h != d:
                lg.kern(
                    h,
                    t - 400,
                    f"CMMDS: CMMDSStateDestroyNode:{int(rng.integers(600, 900))}: Destroying node "
                    f"{hosts[d].uuid}: Node left cluster",
                )
                lg.kern(
                    h,
                    t + 60,
                    f"CMMDS: CMMDSStateCreateNode:{int(rng.integers(600, 900))}: Created node {hosts[d].uuid}",
                )
    elif cause == "disk_failure":
        lost = int(params.get("lost_host", 0))
        du = "52" + hexs(rng, 6) + "-" + hexs(rng, 4) + "-" + hexs(rng, 4) + "-" + hexs(rng, 4) + "-" + hexs(rng, 12)
        lg.kern(
            lost,
            t,
            f"LSOM: LSOMEventNotify:{int(rng.integers(6000, 8000))}: Virtual SAN device {du} is under permanent error.",
            warn=True,
        )
        lg.vob(
            lost, t + 0.02, "LSOMCorrelator", "esx.problem.vob.vsan.pdl.offline", f"vSAN device {du} has gone offline."
        )
