"""One simulated diagnosis bundle, end to end: hardware, faults, workload, physics, then every file."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from data.simulate import esxcli, perfdump
from data.simulate.benign import draw_benign
from data.simulate.captures import esxtop_files
from data.simulate.causes import ALL, CauseFilter
from data.simulate.conditions import build_conditions
from data.simulate.derive import derive_events
from data.simulate.events import Event, HostLogContext, NicInfo
from data.simulate.logs import render_host_logs
from data.simulate.metrics import build_metrics
from data.simulate.netmetrics import Metrics
from data.simulate.physics import solve
from data.simulate.plan import Grid, Injected, Plan, labels, make_plan
from data.simulate.sitevar import log_style, site_metrics
from data.simulate.topology import Cluster, Rng, _uuid, build_cluster
from data.simulate.vscsi import capture_rng, vscsi_files
from data.simulate.workload import Workload, build_workload

PROFILES = ("lab", "field")
DEFAULT_ISSUE_RATE = {"lab": 0.5, "field": 0.78}
DUMP = "commands/python_usrlibvmwarevsanperfsvcvsan-perfsvc-statuspyc-perf_stats_with_dump.txt"


@dataclass
class Bundle:
    name: str
    files: dict[str, bytes]  # path inside the upload -> content
    labels: dict[str, object]
    hosts: int
    hosts_present: int
    samples: int
    interval: int
    storage: str
    mix: str
    cluster: Cluster  # what the model saw, for tests that check signatures without a parser
    plan: Plan
    workload: Workload
    metrics: Metrics
    events: dict[int, list[Event]]


def bundle_rng(profile: str, seed: int, index: int) -> Rng:
    """Independent stream per bundle: output depends on (profile, seed, index) only, not on workers."""
    return np.random.default_rng(np.random.SeedSequence([seed, index, PROFILES.index(profile)]))


def _grid(profile: str, rng: Rng) -> Grid:
    day0 = dt.datetime(2025, 6, 1, tzinfo=dt.UTC).timestamp()
    if profile == "lab":
        interval, n = 20, 360  # high-resolution mode, two hours
    else:
        interval = int(rng.choice([20, 30, 60, 120, 300], p=[0.25, 0.15, 0.2, 0.1, 0.3]))
        hours = rng.uniform(1.0, min(48.0, 576 * interval / 3600))
        n = max(int(hours * 3600 / interval), 30)
    start = int(day0 + rng.integers(0, 500) * 86400 + rng.integers(0, 86400))
    return Grid(start - start % interval, interval, n)


def _drop_samples(metrics: Metrics, n: int, rng: Rng) -> tuple[np.ndarray | None, frozenset[str]]:
    """Field uploads are incomplete: collection gaps, None values, an entity with no data yet."""
    keep = None
    if rng.random() < 0.3:
        keep = np.ones(n, dtype=bool)
        a = int(rng.integers(1, n - 2))
        keep[a : a + max(1, int(n * rng.uniform(0.02, 0.1)))] = False
    if rng.random() < 0.3:
        p = rng.uniform(0.005, 0.03)
        for entities in metrics.values():
            for series in entities.values():
                for label, x in series.items():
                    series[label] = np.where(rng.random(n) < p, np.nan, x)
    empty: set[str] = set()
    if rng.random() < 0.05 and metrics["capacity-disk"]:
        empty.add("capacity-disk:" + next(iter(metrics["capacity-disk"])))
    return keep, frozenset(empty)


def _extra_entities(metrics: Metrics, cluster: Cluster, rng: Rng) -> None:
    """Entity types real dumps carry that we do not model: the pipeline must skip them."""
    n = len(next(iter(metrics["cluster-domclient"].values()))["iopsRead"])
    agg = {k: np.sum([m[k] for m in metrics["host-domcompmgr"].values()], axis=0) for k in ("iopsRead", "iopsWrite")}
    metrics["cluster-domcompmgr"] = {cluster.uuid: {**agg, "latencyAvgRead": np.full(n, 0.0) + 400}}
    metrics["vsan-memory"] = {
        h.uuid: {"overallSlabUsedBytes": rng.uniform(1e9, 4e9) + np.zeros(n)} for h in cluster.hosts
    }


def simulate_bundle(
    profile: str,
    seed: int,
    index: int,
    issue_rate: float | None = None,
    faults: Sequence[str] | None = None,
    causes: Sequence[str] | CauseFilter | None = None,
    exclude_causes: Sequence[str] | None = None,
    cluster_hook: Callable[[Cluster], Cluster] | None = None,
) -> Bundle:
    """Bundle `index` of the (profile, seed) stream; `faults` forces exactly those faults. `causes`
    draws faults only through those causes (`fault:cause`, a cause name or a fault id), and
    `exclude_causes` never through those (causes.CauseFilter). `cluster_hook` rebuilds the drawn
    hardware before anything runs on it (data.simulate.ood: hardware outside the profile's ranges)."""
    rng = bundle_rng(profile, seed, index)
    rate = DEFAULT_ISSUE_RATE[profile] if issue_rate is None else issue_rate
    flt = causes if isinstance(causes, CauseFilter) else CauseFilter.of(causes, exclude_causes)
    hot_only = flt.only is not None and all(k.startswith("disk.hotspot:") for k in flt.only)
    dedup = ("disk.hotspot" in (faults or ())) or (hot_only and flt is not ALL)
    cluster = build_cluster(profile, rng, dedup_flash=dedup)
    if cluster_hook is not None:
        cluster = cluster_hook(cluster)
    grid = _grid(profile, rng)
    plan = make_plan(cluster, grid, rate, rng, force=faults, flt=flt)
    draw_benign(cluster, plan, rng)
    wl = build_workload(cluster, plan, rng)
    cluster.vm_uuids = [_uuid(rng, "50") for _ in wl.names]
    cond = build_conditions(cluster, plan, wl, rng)
    fill0 = rng.uniform(0.1, 0.35, size=len(cluster.disk_groups))
    st = solve(cluster, wl, cond, float(grid.dt), fill0)
    metrics = build_metrics(cluster, wl, cond, st, float(grid.dt), rng)
    events = derive_events(cluster, plan, cond, st, rng)
    field = profile == "field"
    if field:
        site_metrics(metrics, rng)  # this site's measurement noise and the counters it does not collect
    keep, empty = _drop_samples(metrics, grid.n, rng) if field else (None, frozenset())
    if field and rng.random() < 0.6:
        _extra_entities(metrics, cluster, rng)
    dump = perfdump.render_dump(metrics, grid.times, grid.dt, keep, empty).encode()
    name = f"{profile}-s{seed}-{index:06d}"
    files = _host_files(cluster, plan, events, dump, rng, field)
    files.update(esxtop_files(cluster, wl, cond, st, plan, files, rng))
    files.update(vscsi_files(cluster, wl, st, float(grid.dt), files, capture_rng(profile, seed, index)))
    lab = labels(cluster, plan, profile, seed)
    files["labels.json"] = (json.dumps(lab, indent=1) + "\n").encode()
    present = len({p.split("/", 1)[0] for p in files if p.startswith("esx-")})
    return Bundle(
        name,
        files,
        lab,
        len(cluster.hosts),
        present,
        grid.n,
        grid.dt,
        cluster.storage,
        wl.mix,
        cluster,
        plan,
        wl,
        metrics,
        events,
    )


def _host_files(
    cluster: Cluster, plan: Plan, events: dict[int, list[Event]], dump: bytes, rng: Rng, field: bool
) -> dict[str, bytes]:
    grid = plan.grid
    end = float(grid.times[-1] + grid.dt)
    collected = dt.datetime.fromtimestamp(end + rng.uniform(300, 3600), dt.UTC).strftime("%Y-%m-%d--%H.%M")
    hosts = list(range(len(cluster.hosts)))
    if field and rng.random() < 0.35 and len(hosts) > 1:  # the customer uploaded only some hosts
        hosts = sorted(int(h) for h in rng.choice(hosts, size=int(rng.integers(1, len(hosts))), replace=False))
    dump_name = DUMP if not field or rng.random() < 0.9 else "commands/vsan-perfsvc-status_perf_stats_with_dump.txt"
    cmmds = esxcli.render_cmmds(cluster, rng).encode()
    style = log_style(cluster, rng)
    files: dict[str, bytes] = {}
    for h in hosts:
        host = cluster.hosts[h]
        top = f"esx-{host.name}-{collected}-{int(rng.integers(1000, 99999))}"
        files[f"{top}/{dump_name}"] = dump
        files[f"{top}/commands/cmmds-tool_find--f-python.txt"] = cmmds
        files[f"{top}/commands/localcli_vsan-storage-list.txt"] = esxcli.render_storage_list(cluster, host).encode()
        files[f"{top}/commands/localcli_vsan-network-list.txt"] = esxcli.render_network_list(host, rng).encode()
        nics = list(host.nics)
        for f in plan.faults:  # what nicinfo shows at collection time
            if f.fault == "net.link_degraded" and f.host == h:
                # an MTU is the vSwitch's: the standby uplink shows it too
                on = (f.nic, host.standby_nic) if f.cause == "mtu_mismatch" else (f.nic,)
                for k in (k for k in on if k is not None):
                    nics[k] = _degraded(nics[k], f)
        files[f"{top}/commands/nicinfo.sh.txt"] = esxcli.render_nicinfo(nics).encode()
        ctx = HostLogContext(
            hostname=host.name,
            host_uuid=host.uuid,
            esxi_major=host.esxi_major,
            build=host.build,
            n_cpus=host.n_cpus,
            devices=(host.boot_dev, *(d.dev for d in host.disks)),
            disk_uuids=tuple(d.uuid for d in host.disks),
            nics=tuple(nics),
            peer_uuids=tuple(o.uuid for o in cluster.hosts if o is not host),
            vsan_nic=nics[host.vsan_nic].name,
            standby_nic=nics[host.standby_nic].name if host.standby_nic is not None else "",
            **style,
        )
        logs = render_host_logs(ctx, events[h], float(grid.times[0]), end, rng)
        for path, data in logs.items():
            files[f"{top}/{path}"] = data
    return files


def _degraded(nic: NicInfo, f: Injected) -> NicInfo:
    if f.cause == "mtu_mismatch":
        return replace(nic, mtu=1500)
    return replace(nic, speed_mbps=int(f.param), duplex="Half" if f.cause == "half_duplex" else "Full")
