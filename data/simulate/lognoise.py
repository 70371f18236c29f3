"""Benign background every host logs all window long: feature-probe sense failures, rescans, VM
power operations, vSAN informational lines, harmless warnings and audit VOBs. None of it borrows a
fault's shape, so a fault shows in *what* is logged, never in the mere presence of lines."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from data.simulate.logsink import LogSink

_BENIGN_SENSE = ("0x5 0x20 0x0", "0x5 0x24 0x0")  # illegal request: opcode / CDB field not supported
_PROBE_OPS = ("0x85", "0x4d", "0x1a", "0x4d", "0x85")  # ATA pass-through (smartd), LOG/MODE SENSE
_WARN_NOISE = (
    "WARNING: NetDVS: 681: portAlias is NULL",
    "WARNING: UserSocketInet: 2266: python: waiters list not empty!",
    "WARNING: LinuxSocket: 1854: UNKNOWN/UNSUPPORTED socketcall op (whichCall=0x12, args@0xffd8b56c)",
)
_FW_RULES = ("sshServer", "syslog", "CIMHttpServer", "vsanhealth-unicasttest")


class NoisyHost(LogSink):
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
            if self.ctx.opid_share and r.u() < 0.5:
                vc = f"VC opID {r.pick(('vim-cmd', 'lro', 'HB'))}-{r.n(10, 99)}-{r.n(0, 1 << 16):04x}"
                self.k(ms - 1, f"World: 12231: {vc} maps to vmkernel opID {self.opid()}", op=True)
            self.k(ms, f"VSCSI: 4068: {h}:Creating Virtual Device for world {w} {blocks}", op=True)
            mac = ":".join(f"{r.n(0, 256):02x}" for _ in range(3))
            self.k(later, f"NetPort: 1359: enabled port 0x{port:x} with mac 00:50:56:{mac}", "net", op=True)
        else:
            self.k(ms, f"NetPort: 1580: disabled port 0x{port:x}", "net", op=True)
            self.k(later, f"VSCSI: 6602: {h}:Destroying Device for world {w} (pendCom 0)", op=True)

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

    def n_nfs(self, ms: int) -> None:
        """An NFS datastore's own latency warnings: 'performance has deteriorated', but of a volume, not a
        vSAN device (ESXi 8 shapes, as in shared/samples/real/logs)."""
        r, vol = self.r, self.ctx.nfs_volume
        c = r.u()
        if c < 0.15:
            self.k(ms, f"NFS: 317: NFS mount succeeded for {self.ctx.nfs_server} volume {vol}.", op=True)
        elif c < 0.4:
            self.k(ms, f"NFS: 6339: Status:No connection. Retrying synchronous write I/O 1 of {r.n(5, 26)} times")
        else:
            avg, now = r.n(0, 12000), r.n(10500, 130000)
            det = f"NFS volume {vol} performance has deteriorated. I/O latency increased from average value of "
            thr = " Exceeded threshold 10000(us)" if r.u() < 0.6 else ""
            self.k(ms, f"WARNING: NFS: 5544: {det}{avg}(us) to {now}(us).{thr}", "io", True)
            if r.u() < 0.4:
                last = f"NFS volume {vol} average I/O latency {r.n(10500, 40000)}(us) has exceeded threshold 10000(us)"
                self.k(ms + r.n(5000, 60000), f"WARNING: NFS: 5575: {last} for last 10 minutes", "io", True)

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
        if self.ctx.nfs_volume:
            kinds.append((u() * 3 + 0.3, self.n_nfs))
        hours = max(end - start, 0.0) / 3600.0
        for per_hour, fn in kinds:
            n = int(self.rng.poisson(per_hour * hours))
            for t in np.sort(self.rng.uniform(start, end, n)).tolist():
                fn(int(t * 1000))
