"""The I/O path as a small closed queueing network, solved per sample.

A guest I/O issued on client host c is a read served by one replica owner (uniform over hosts) or a
RAID-1 write acknowledged when both replicas (a random pair of hosts) are done. Owner service time is
LSOM overhead plus the device latency of the disk group it lands on (which grows with utilisation),
plus CPU ready delay; the network adds a round trip, wire time and any loss/saturation penalty on either
end. Throughput follows from Little's law; device loads follow from throughput; iterate.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from data.outsider.layout import Rng
from data.outsider.scenario import Scenario
from data.outsider.workload import Load

F = NDArray[np.float64]
US = 1e-6


def util_mult(u: F) -> F:
    u = np.clip(u, 0.0, 0.93)
    return np.asarray(1.0 + 0.6 * u / (1.0 - u), dtype=np.float64)


def cost(bs: F) -> F:
    """Work of one I/O in small-block equivalents."""
    return np.asarray(1.0 + bs / 16384.0, dtype=np.float64)


class Engine:
    def __init__(self, rng: Rng, sc: Scenario, load: Load) -> None:
        self.sc, self.load = sc, load
        cl = sc.cluster
        self.H, self.T = H, T = len(cl.hosts), sc.T
        self.groups = [(h, g) for h, host in enumerate(cl.hosts) for g in range(len(host.dgs))]
        G = len(self.groups)
        self.gh = np.array([h for h, _ in self.groups])
        w = rng.uniform(0.8, 1.2, G)
        for h in range(H):
            w[self.gh == h] /= w[self.gh == h].sum()
        self.wdg = w
        dev_rd = {"nvme": 75.0, "sas_ssd": 120.0, "sata_ssd": 160.0, "hdd": 6500.0}
        dev_wr = {"nvme": 35.0, "sas_ssd": 90.0, "sata_ssd": 140.0, "hdd": 4200.0}
        j = lambda n: rng.uniform(0.8, 1.25, n)  # noqa: E731
        dgs = [cl.hosts[h].dgs[g] for h, g in self.groups]
        self.crd = np.array([dev_rd[d.cache.kind] for d in dgs]) * j(G)
        self.cwr = np.array([dev_wr[d.cache.kind] for d in dgs]) * j(G)
        self.caprd = np.array([dev_rd[d.caps[0].kind] for d in dgs]) * j(G)
        self.capwr = np.array([dev_wr[d.caps[0].kind] for d in dgs]) * j(G)
        self.hit = np.array([rng.uniform(0.86, 0.98) if not d.all_flash else rng.uniform(0.04, 0.2) for d in dgs])
        self.iops_cap = np.array([d.iops_cap for d in dgs]) * j(G)
        self.ovh = rng.uniform(60, 160, H)
        self.lsom = rng.uniform(20, 60, H)
        self.rtt = float(rng.uniform(35, 110))
        self.rate = np.repeat(np.array([h.nics[h.vsan_nic].speed * 1e6 / 8 for h in cl.hosts])[:, None], T, axis=1)
        # fault effects (filled by effects.apply)
        self.cpu_pen = np.zeros((H, T))
        self.np_loss = np.zeros((H, T))
        self.np_link = np.zeros((H, T))
        self.link_cap = np.full((H, T), np.inf)
        self.half = np.zeros(H, dtype=bool)
        self.fm: dict[tuple[int, int], F] = {}  # (group, disk index or -1 for cache) -> latency factor
        self.hot: tuple[int, int, F] | None = None  # group, capacity disk, outstanding reads
        self.hot_lat = np.zeros(T)
        self.wbpen = np.zeros((G, T))
        self.res_r = np.zeros((H, T))  # resync bytes/s read at sources
        self.res_w = np.zeros((H, T))  # resync bytes/s written at destinations
        self.drain = np.array([d.drain_cap for d in dgs])
        # solved state
        self.u = np.zeros((G, T))
        self.u_cap = np.zeros((G, T))
        self.L0: F | None = None

    # ------------------------------------------------------------------ owner side
    def devices(self, R_g: F, W_g: F) -> tuple[F, F, F, F, list[F]]:
        """Device latencies per group given owner read/write iops per group."""
        ld = self.load
        res = (self.res_r[self.gh] + self.res_w[self.gh]) * self.wdg[:, None] / 16384.0
        u = (R_g * cost(ld.bsr) + W_g * cost(ld.bsw) + res) / self.iops_cap[:, None]
        self.u = u
        m = util_mult(u)
        hdd = np.array([not self.sc.cluster.hosts[h].dgs[g].all_flash for h, g in self.groups])[:, None]
        ncap = np.array([len(self.sc.cluster.hosts[h].dgs[g].caps) for h, g in self.groups])[:, None]
        u_cap = (R_g * (1 - self.hit[:, None]) + W_g * ld.bsw / 262144.0) / (ncap * 220.0)
        self.u_cap = np.where(hdd, u_cap, u)
        m_cap = util_mult(self.u_cap)
        one = np.ones(self.T)
        c_rd = self.crd[:, None] * m
        c_wr = self.cwr[:, None] * m
        caps: list[F] = []
        for gi, (h, g) in enumerate(self.groups):
            fc = self.fm.get((gi, -1), one)
            c_rd[gi] *= fc
            c_wr[gi] *= fc
            n = len(self.sc.cluster.hosts[h].dgs[g].caps)
            lat = np.stack([self.caprd[gi] * m_cap[gi] * self.fm.get((gi, k), one) for k in range(n)])
            if self.hot is not None and self.hot[0] == gi:
                lat[self.hot[1]] = self.hot_lat
            caps.append(lat)
        cap_mean = np.stack([c.mean(axis=0) for c in caps])
        rd = self.hit[:, None] * c_rd + (1 - self.hit[:, None]) * cap_mean
        return rd, c_rd, c_wr, cap_mean, caps

    def owners(self, R_g: F, W_g: F) -> tuple[F, F]:
        rd, _, c_wr, _, _ = self.devices(R_g, W_g)
        Sr = np.zeros((self.H, self.T))
        Sw = np.zeros((self.H, self.T))
        np.add.at(Sr, self.gh, self.wdg[:, None] * rd)
        np.add.at(Sw, self.gh, self.wdg[:, None] * (c_wr + self.wbpen))
        base = self.lsom[:, None] + self.cpu_pen
        return Sr + base, Sw + base

    # ------------------------------------------------------------------ client side
    def netpen(self, extra: F | None = None) -> tuple[F, F]:
        ld = self.load
        pen = self.np_loss + self.np_link
        if extra is not None:
            pen = pen + extra
        wr = ld.bsr[None, :] / self.rate / US
        ww = ld.bsw[None, :] / self.rate / US
        return pen + wr, pen + ww

    def clients(self, Sr: F, Sw: F, extra: F | None = None) -> tuple[F, F]:
        H = self.H
        pr, pw = self.netpen(extra)
        off = 1.0 - np.eye(H)[:, :, None]
        net_r = off * (self.rtt + pr[:, None, :] + pr[None, :, :])
        net_w = off * (self.rtt + pw[:, None, :] + pw[None, :, :])
        front = self.ovh[:, None] + self.cpu_pen
        Lr = front + (Sr[None, :, :] + net_r).mean(axis=1)
        if H < 2:
            return Lr, front + Sw
        x = np.sort(Sw[None, :, :] + net_w, axis=1)
        wts = np.arange(H, dtype=np.float64) / (H * (H - 1) / 2)
        Lw = front + (x * wts[None, :, None]).sum(axis=1)
        return Lr, Lw

    def rates(self, Lr: F, Lw: F) -> tuple[F, F, F, F]:
        """Client read/write iops and reported read latency (hot reads included), oio in flight."""
        ld = self.load
        oio = ld.oio
        if self.L0 is not None and ld.beta > 0:
            L = ld.rf * Lr + (1 - ld.rf) * Lw
            oio = oio * np.clip(L / self.L0, 1.0, 20.0) ** ld.beta
        q = np.zeros_like(oio)
        lhot = Lr
        if self.hot is not None:
            q = self.hot[2][None, :] * oio / oio.sum(axis=0, keepdims=True)
            lhot = self.hot_lat[None, :] + self.ovh[:, None] + self.rtt + self.cpu_pen
        rest = np.maximum(oio - q, 0.0)
        X = rest / ((ld.rf * Lr + (1 - ld.rf) * Lw) * US)
        R = ld.rf * X + q / (lhot * US)
        W = (1 - ld.rf) * X
        lat_r = (ld.rf * X * Lr + q / (lhot * US) * lhot) / np.maximum(R, 1e-9)
        return R, W, lat_r, oio

    def to_groups(self, R: F, W: F) -> tuple[F, F]:
        H = self.H
        hot = np.zeros(self.T) if self.hot is None else self.hot[2] / (self.hot_lat * US)
        Ro = np.maximum(R.sum(axis=0) - hot, 0.0) / H
        Wo = 2.0 * W.sum(axis=0) / H if H > 1 else W.sum(axis=0)
        R_g = Ro[None, :] * self.wdg[:, None]
        if self.hot is not None:
            R_g[self.hot[0]] += hot
        return R_g, Wo[None, :] * self.wdg[:, None]

    def traffic(self, R: F, W: F) -> tuple[F, F]:
        """vSAN bytes/s received and sent per host."""
        H, ld = self.H, self.load
        if H < 2:
            z = np.zeros((1, self.T))
            return z, z
        rd_b, wr_b = R * ld.bsr, W * ld.bsw
        share = (H - 1) / H
        rx = rd_b * share + 2.0 * (wr_b.sum(axis=0) - wr_b) / H + self.res_w
        tx = 2.0 * wr_b * share + (rd_b.sum(axis=0) - rd_b) / H + self.res_r
        return rx, tx

    # ------------------------------------------------------------------ solve
    def solve(self, iters: int = 3) -> dict[str, F]:
        G = len(self.groups)
        R_g = np.full((G, self.T), 100.0)
        W_g = np.full((G, self.T), 100.0)
        Lr = Lw = np.zeros((self.H, self.T))
        for _ in range(iters):
            Sr, Sw = self.owners(R_g, W_g)
            Lr, Lw = self.clients(Sr, Sw)
            self.link(Sr, Sw)
            Lr, Lw = self.clients(Sr, Sw)
            R, W, _, _ = self.rates(Lr, Lw)
            nr, nw = self.to_groups(R, W)
            R_g, W_g = 0.5 * R_g + 0.5 * nr, 0.5 * W_g + 0.5 * nw
        Sr, Sw = self.owners(R_g, W_g)
        Lr, Lw = self.clients(Sr, Sw)
        R, W, lat_r, oio = self.rates(Lr, Lw)
        R_g, W_g = self.to_groups(R, W)
        self.devices(R_g, W_g)
        rx, tx = self.traffic(R, W)
        return {
            "Sr": Sr,
            "Sw": Sw,
            "Lr": lat_r,
            "Lw": Lw,
            "R": R,
            "W": W,
            "R_g": R_g,
            "W_g": W_g,
            "oio": oio,
            "rx": rx,
            "tx": tx,
        }

    def link(self, Sr: F, Sw: F) -> None:
        """Queueing on a saturated uplink: find the extra delay that holds its traffic at the link rate."""
        for h in np.flatnonzero(np.isfinite(self.link_cap).any(axis=1)):
            cap = self.link_cap[h]
            self.np_link[h] = 0.0
            lo = np.zeros(self.T)
            hi = np.full(self.T, 2e5)
            for _ in range(22):
                mid = 0.5 * (lo + hi)
                extra = np.zeros((self.H, self.T))
                extra[h] = mid
                Lr, Lw = self.clients(Sr, Sw, extra)
                R, W, _, _ = self.rates(Lr, Lw)
                rx, tx = self.traffic(R, W)
                used = rx[h] + tx[h] if self.half[h] else np.maximum(rx[h], tx[h])
                over = used > cap
                lo = np.where(over, mid, lo)
                hi = np.where(over, hi, mid)
            self.np_link[h] = hi * (hi > 1.0)
