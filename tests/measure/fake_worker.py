"""A fake measurement worker for the pool tests: speaks the hello, then misbehaves on purpose.

    python fake_worker.py MODE    MODE: ok | varied | hang | die | badline | fault

ok answers every job valid; hang never answers; die exits 9 without answering; badline prints junk;
fault answers fault:CUDA_ERROR_MISALIGNED_ADDRESS with exit:true and exits 3. Jobs whose spec kernel name
contains "hang"/"die"/"badline"/"fault" misbehave that way in mode ok too, so one run can mix them.
"""

import json
import os
import sys
import time


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    hello = {"gpu": "FakeGPU", "driver": "0.0 (CUDA 0.0)", "cc": "0.0", "pid": os.getpid()}
    print(json.dumps({"hello": hello}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("op") == "quit":
            return
        name = req.get("spec", {}).get("kernel", "")
        how = next((m for m in ("cmpfault", "hang", "die", "badline", "fault") if m in name), mode)
        if how == "hang":
            time.sleep(3600)
        elif how == "die":
            os._exit(9)
        elif how == "badline":
            print("this is not json", flush=True)
        elif how == "fault":
            print(json.dumps({"id": req["id"], "valid": False,
                              "reason": "fault:CUDA_ERROR_MISALIGNED_ADDRESS", "log": "misaligned address",
                              "exit": True}), flush=True)
            os._exit(3)
        elif req.get("op") == "compare":  # per round: 10 µs + a cubin-dependent offset, shared drift
            rounds = req["timing"]["rounds"]
            if how == "cmpfault" and len({c[0] for c in req["contenders"]}) >= 2:
                print(json.dumps({"id": req["id"], "valid": False, "reason": "fault:CUDA_ERROR_LAUNCH_FAILED",
                                  "log": "unspecified launch failure", "exit": True}), flush=True)
                os._exit(3)
            cs = [{"valid": True, "reason": "", "log": "", "graph_ms": None,
                   "event_ms": [0.010 * (1 + int(c[0][:2], 16) / 2560) * (1 + 0.01 * (r % 3))
                                for r in range(rounds)]} for c in req["contenders"]]
            print(json.dumps({"id": req["id"], "valid": True, "reason": "", "log": "", "contenders": cs,
                              "primary": "event", "probe_ms": 0.01, "flush_graph_ms": None}), flush=True)
        elif req.get("op") == "rounds":  # one answer per candidate, cycles from its cubin's hash
            res = [{"valid": True, "reason": "", "log": "",
                    "time_ms": {"median": 0.01, "iqr": 0.001, "n": 48},
                    "cycles": {"median": 1000.0 + int(v[0][:3], 16), "iqr": 10.0, "n": 200}}
                   for v, _ in req["candidates"]]
            print(json.dumps({"id": req["id"], "valid": True, "reason": "", "log": "", "results": res}),
                  flush=True)
        else:  # varied: cycles depend on the variant's cubin, so that a search has something to find
            cycles = 1000.0 + (int(req["variant"][0][:3], 16) if how == "varied" else 0)
            print(json.dumps({"id": req["id"], "valid": True, "reason": "", "log": "",
                              "device": os.environ.get("CUDA_VISIBLE_DEVICES"),
                              "time_ms": {"median": cycles / 1e5, "iqr": 0.001, "n": 5},
                              "cycles": {"median": cycles, "iqr": 10.0, "n": 5}}), flush=True)


if __name__ == "__main__":
    main()
