"""One bundle: run the scenario through the model, then lay out host folders, captures and labels."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import tarfile
from pathlib import Path

import numpy as np

import data.outsider.captures as captures
import data.outsider.counters as counters
import data.outsider.dump as dump
import data.outsider.effects as effects
import data.outsider.logs as logs
import data.outsider.scenario as scenario
import data.outsider.texts as texts
import data.outsider.workload as workload
from data.outsider.engine import Engine
from data.outsider.scenario import FAULTS, Fault, Scenario

HOST_FAULTS = tuple(f for f in FAULTS if not f.startswith("cluster."))  # a host must be in the upload


def component(sc: Scenario, f: Fault) -> str:
    if f.host < 0:
        return "cluster"
    h = sc.cluster.hosts[f.host]
    if f.fault.startswith("net."):
        return f"nic:{h.name}/{h.nics[f.nic].name}"
    if f.fault == "dg.write_buffer":
        return f"diskgroup:{h.name}/{h.dgs[f.dg].cache.dev}"
    if f.fault.startswith("disk."):
        g = h.dgs[f.dg]
        return f"disk:{h.name}/{(g.cache if f.disk < 0 else g.caps[f.disk]).dev}"
    return f"host:{h.name}"


def outsider_bundle(seed: int, index: int) -> tuple[str, dict[str, bytes], dict[str, object]]:
    rng = np.random.default_rng([seed, index, 0x0575])
    sc = scenario.build(rng, seed, index)
    load = workload.make_load(rng, sc)
    workload.shape_for_faults(rng, sc, load)
    eng = Engine(rng, sc, load)
    base = normalise(rng, eng, load)
    eng.L0 = load.rf * base["Lr"] + (1 - load.rf) * base["Lw"]
    ef = effects.apply(rng, eng, sc.faults, sc.normal_resync, base)
    st = eng.solve(3)
    wb = effects.write_buffer(rng, eng, sc.faults, st["W_g"], float(sc.interval))
    st = eng.solve(2)
    c = counters.build(rng, eng, st, ef, wb)
    dump.extras(rng, c.ents, sc.cluster.uuid)
    kept = [f for f in sc.faults if visible(f, eng, wb)]
    return assemble(rng, sc, c, kept, seed, index)


def normalise(rng: np.random.Generator, eng: Engine, load: workload.Load) -> dict[str, np.ndarray]:
    """Keep the offered load physically plausible: vSAN uplinks below ~60 % of their rate, devices below
    ~75 % busy; benchmarks keep at least 3 outstanding I/Os per VM disk (fewer is the low-OIO fault)."""
    hybrid = not eng.sc.cluster.all_flash
    net_t = float(rng.uniform(0.3, 0.6))
    dev_t = float(rng.uniform(0.35, 0.55) if hybrid else rng.uniform(0.5, 0.75))
    base = eng.solve(2)
    total = 1.0
    floor = 0.0
    if load.per_disk > 0:
        floor = min(1.0, (3.0 if eng.sc.workload == "bench" else load.per_disk) / load.per_disk)
    for _ in range(8):
        net = float(np.max(np.percentile(np.maximum(base["rx"], base["tx"]) / eng.rate, 99, axis=1)))
        dev = float(np.max(np.percentile(np.maximum(eng.u, eng.u_cap), 99, axis=1)))
        s = min(1.0, net_t / max(net, 1e-9), (dev_t / max(dev, 1e-9)) ** 1.5)
        if total * s < floor:
            shrink = max(0.25, total * s / floor)
            load.bsr *= np.where(load.bsr * shrink >= 4096, shrink, 1.0)
            load.bsw *= np.where(load.bsw * shrink >= 4096, shrink, 1.0)
            eng.iops_cap *= max(1.0, dev / dev_t)
            s = floor / total
        if s > 0.97:
            break
        load.oio *= s
        total *= s
        base = eng.solve(2)
    return base


def visible(f: Fault, eng: Engine, wb: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> bool:
    if f.fault != "dg.write_buffer":
        return True
    gi = eng.groups.index((f.host, f.dg))
    fill, cong = wb[0][gi, f.onset : f.end], wb[1][gi, f.onset : f.end]
    return bool(cong.size and (np.percentile(cong, 75) >= 8 or fill.max() > 0.55))


def assemble(
    rng: np.random.Generator, sc: Scenario, c: counters.Counters, faults: list[Fault], seed: int, index: int
) -> tuple[str, dict[str, bytes], dict[str, object]]:
    cl = sc.cluster
    H = len(cl.hosts)
    must = {f.host for f in faults if f.fault in HOST_FAULTS}
    if rng.random() < 0.4:
        chosen = set(range(H))
    else:
        k = int(rng.integers(1, H + 1))
        chosen = must | {int(x) for x in rng.choice(H, size=k, replace=False)}
    end = sc.start + dt.timedelta(seconds=sc.interval * sc.T)
    perf = dump.render(rng, c.ents, sc.start, sc.interval, sc.T).encode()
    dump_name = str(rng.choice(dump.DUMP_NAMES))
    cm = texts.cmmds(rng, cl).encode()
    lg = logs.Log(rng, sc)
    span = sc.interval * sc.T
    for h in range(H):
        logs.noise(lg, h, cl.hosts[h], float(span))
    logs.faults(lg, c)
    files: dict[str, bytes] = {}
    nic_rows: dict[str, list[str]] = {}
    folders: dict[int, str] = {}
    for h in sorted(chosen):
        host = cl.hosts[h]
        coll = end + dt.timedelta(minutes=int(rng.integers(2, 240)))
        top = f"esx-{host.name}-{coll.strftime('%Y-%m-%d--%H.%M')}-{int(rng.integers(1, 400000))}"
        folders[h] = top
        files[f"{top}/{dump_name}"] = perf
        files[f"{top}/commands/cmmds-tool_find--f-python.txt"] = cm
        link_here = any(f.fault == "net.link_degraded" and f.host == h for f in faults)
        if rng.random() < 0.9:
            files[f"{top}/commands/localcli_vsan-storage-list.txt"] = texts.storage_list(rng, host).encode()
        if rng.random() < 0.85:
            files[f"{top}/commands/localcli_vsan-network-list.txt"] = texts.network_list(rng, host).encode()
        if link_here or rng.random() < 0.88:
            files[f"{top}/commands/nicinfo.sh.txt"] = texts.nicinfo(rng, host, nic_stats(c, sc, h)).encode()
            nic_rows[host.name] = [n.name for n in host.nics]
        files[f"{top}/commands/vmware_-vl.txt"] = (
            f"VMware ESXi {'8.0.2' if cl.esx8 else '7.0.3'} build-{22380479 if cl.esx8 else 21930508}\n".encode()
        )
        for name, p in (("vmkernel", 0.92), ("vmkwarning", 0.8), ("vobd", 0.8)):
            if rng.random() < p:
                text = lg.render(h, name, sc.start)
                if name == "vmkernel" and rng.random() < 0.25 and text.count("\n") > 6:
                    ls = text.splitlines(keepends=True)
                    cut = len(ls) // 3
                    files[f"{top}/var/run/log/vmkernel.0.gz"] = gzip.compress("".join(ls[:cut]).encode(), mtime=0)
                    text = "".join(ls[cut:])
                files[f"{top}/var/run/log/{name}.log"] = text.encode()
    if rng.random() < 0.45:
        cand = sorted(must) if must and rng.random() < 0.85 else list(range(H))
        h = int(rng.choice(cand))
        onset = max((f.onset for f in faults if f.host == h), default=0)
        at = int(rng.integers(onset, sc.T)) if rng.random() < 0.85 else int(rng.integers(0, sc.T))
        label, data = captures.esxtop(rng, sc, c, h, min(at, sc.T - 1))
        stamp = (sc.start + dt.timedelta(seconds=at * sc.interval)).strftime("%Y%m%d-%H%M")
        if h in folders and rng.random() < 0.6:
            files[f"{folders[h]}/esxtop-{stamp}.csv"] = data
        else:
            files[f"esxtop_{label.split('.')[0]}_{stamp}.csv"] = data
    if rng.random() < 0.15 and folders:
        h = int(rng.choice(sorted(folders)))
        files[f"vscsiStats-{cl.hosts[h].name.split('.')[0]}.csv"] = captures.vscsistats(rng, sc, c, h).encode()
    labels = make_labels(sc, c, faults, nic_rows, seed)
    return f"ext-{seed}-{index:05d}", files, labels


def nic_stats(c: counters.Counters, sc: Scenario, h: int) -> dict[str, tuple[float, float, float]]:
    out = {}
    for n in sc.cluster.hosts[h].nics:
        e = c.ents.get(f"vsan-pnic-net:{sc.cluster.hosts[h].uuid}|{n.name}")
        if e is None:
            continue
        k = float(sc.interval)
        out[n.name] = (
            float(e["rxPackets"].sum() * k) + 1e8,
            float(e["rxCrcErr"].sum()),
            float((e["rxErr"] - e["rxCrcErr"]).sum()),
        )
    return out


def make_labels(
    sc: Scenario, c: counters.Counters, faults: list[Fault], nic_rows: dict[str, list[str]], seed: int
) -> dict[str, object]:
    cl = sc.cluster
    comps: dict[str, str] = {"cluster": "none"}
    for h in cl.hosts:
        comps[f"host:{h.name}"] = "none"
        for g in h.dgs:
            comps[f"diskgroup:{h.name}/{g.cache.dev}"] = "none"
            for d in (g.cache, *g.caps):
                comps[f"disk:{h.name}/{d.dev}"] = "none"
        for n in h.nics:
            if f"vsan-pnic-net:{h.uuid}|{n.name}" in c.ents or n.name in nic_rows.get(h.name, []):
                comps[f"nic:{h.name}/{n.name}"] = "none"
    out = []
    for f in faults:
        cid = component(sc, f)
        comps[cid] = f.fault
        onset = sc.start + dt.timedelta(seconds=f.onset * sc.interval)
        out.append(
            {
                "component": cid,
                "fault": f.fault,
                "onset": onset.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "severity": round(f.sev, 3),
                "cause": f.cause,
            }
        )
    return {
        "schema": "vsandx.labels/1",
        "profile": "field",
        "seed": seed,
        "components": dict(sorted(comps.items())),
        "faults": out,
    }


def write_outsider(out_dir: Path, n: int, seed: int) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        name, files, labels = outsider_bundle(seed, i)
        members = dict(files)
        members["labels.json"] = (json.dumps(labels, indent=1) + "\n").encode()
        buf = io.BytesIO()
        with (
            gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=5) as gz,
            tarfile.open(fileobj=gz, mode="w") as tf,
        ):
            for path in sorted(members):
                info = tarfile.TarInfo(path)
                info.size, info.mtime, info.mode = len(members[path]), 0, 0o644
                tf.addfile(info, io.BytesIO(members[path]))
        p = out_dir / f"{name}.tgz"
        p.write_bytes(buf.getvalue())
        paths.append(p)
    return paths
