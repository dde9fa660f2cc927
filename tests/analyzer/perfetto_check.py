"""Reads a Perfetto trace with Perfetto's own schema (perfetto_trace_pb2 from the perfetto
PyPI package; run with the project venv's python) and prints what it holds as JSON: the
tracks, the slices per track (begin, end, name), the flows, and per interval track its
critical-path stretches. Used by tests/analyzer/test_pictures_e2e.py."""
import collections
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def main(path: str) -> int:
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    tracks, slices, open_ = {}, collections.defaultdict(list), collections.defaultdict(list)
    starts, terminates = collections.Counter(), collections.Counter()
    nesting_errors = 0
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            tracks[d.uuid] = {
                "name": d.name or (d.thread.thread_name if d.HasField("thread") else "")
                or (d.process.process_name if d.HasField("process") else ""),
                "parent": d.parent_uuid if d.HasField("parent_uuid") else None,
                "pid": d.thread.pid if d.HasField("thread") else
                       (d.process.pid if d.HasField("process") else None),
                "tid": d.thread.tid if d.HasField("thread") else None,
                "kind": "thread" if d.HasField("thread") else
                        "process" if d.HasField("process") else "named"}
        if packet.HasField("track_event"):
            e = packet.track_event
            if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                open_[e.track_uuid].append([packet.timestamp, None, e.name])
            elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                stack = open_[e.track_uuid]
                if not stack or stack[-1][0] > packet.timestamp:
                    nesting_errors += 1
                    continue
                s = stack.pop()
                s[1] = packet.timestamp
                slices[e.track_uuid].append(s)
            starts.update(e.flow_ids)
            terminates.update(e.terminating_flow_ids)
    unclosed = sum(len(v) for v in open_.values())
    out = {
        "tracks": len(tracks),
        "slices": sum(len(v) for v in slices.values()),
        "nesting_errors": nesting_errors + unclosed,
        "undeclared_tracks": sum(1 for u in slices if u not in tracks),
        "flows": len(starts),
        "flows_paired": set(starts) == set(terminates)
                        and all(c == 1 for c in starts.values())
                        and all(c == 1 for c in terminates.values()),
        "thread_tracks": [t for t in tracks.values() if t["kind"] == "thread"],
        "thread_slice_names": sorted({s[2] for u, v in slices.items()
                                      if tracks.get(u, {}).get("kind") == "thread" for s in v}),
        "intervals": [],
    }
    for uuid, t in tracks.items():
        if t["kind"] != "named" or not slices.get(uuid) or "#" not in t["name"]:
            continue
        (b, e, name), = slices[uuid]
        stretches = [s for u, tt in tracks.items() if tt["parent"] == uuid for s in slices[u]]
        out["intervals"].append({"name": t["name"], "latency_ns": e - b,
                                 "stretches": len(stretches),
                                 "path_ns": sum(s[1] - s[0] for s in stretches),
                                 "begin": b, "end": e,
                                 "path_begin": min((s[0] for s in stretches), default=None),
                                 "path_end": max((s[1] for s in stretches), default=None)})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
