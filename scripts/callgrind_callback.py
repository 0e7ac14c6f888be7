#!/usr/bin/env python3
"""Per-cycle figures of a JACK host's process callback from callgrind dumps (scripts/host-footprint).

Reads the uncompressed dumps (--compress-strings=no) of one run, one file per thread, picks the
thread that called the plugin's run (its costliest function) most (once a cycle), and sums the inclusive cost of the host
binary's costliest function there (its process callback: its own cost plus its calls'). Prints
"cycles Ir I1mr D1mr D1mw" per cycle. Reads the files itself: callgrind_annotate 3.19 puts every
cost of a dump taken after `callgrind_control -z` on the thread's first function.
    callgrind_callback.py BINARY-NAME PLUGIN-PATH-PART FILE...
"""
import collections
import sys


def parse(path, binary, plugin):
    events, ob, fn, cob, cfn = [], "", "", "", ""
    positions = 1  # subpositions before a cost line's events ("positions: line", or "instr line")
    inclusive = {}
    plugin_calls, plugin_cost = collections.Counter(), collections.Counter()
    after_calls, into_plugin = False, False
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("positions:"):
            positions = len(line.split()) - 1
        elif line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("ob="):
            ob = line[3:]
        elif line.startswith("fn="):
            fn, cob = line[3:], ob
        elif line.startswith("cob="):
            cob = line[4:]
        elif line.startswith("cfn="):
            cfn = line[4:]
        elif line.startswith("calls="):
            after_calls, into_plugin = True, plugin in cob
            if into_plugin:
                plugin_calls[cfn] += int(line[6:].split()[0])
        elif line[:1] in "0123456789+-*" and events:
            # A cost line: its position, then the events (trailing zeros left out).
            values = [int(v) for v in line.split()[positions:]]
            values += [0] * (len(events) - len(values))
            if ob.endswith("/" + binary):
                total = inclusive.get(fn, [0] * len(events))
                inclusive[fn] = [a + b for a, b in zip(total, values)]
            if after_calls:
                if into_plugin:
                    plugin_cost[cfn] += values[0]
                after_calls, cob = False, ob
    # The plugin's costliest function is its run (not connect_port, called more often).
    run = max(plugin_cost, key=plugin_cost.get, default=None)
    return events, inclusive, plugin_calls[run] if run else 0


def main():
    binary, plugin, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    best = None
    for path in files:
        events, inclusive, cycles = parse(path, binary, plugin)
        if cycles and (best is None or cycles > best[2]):
            best = (events, inclusive, cycles)
    if best is None:
        sys.exit(f"callgrind_callback: no thread ran {plugin}")
    events, inclusive, cycles = best
    cost = max(inclusive.values(), key=lambda v: v[0])
    figure = dict(zip(events, cost))
    print(cycles, round(figure["Ir"] / cycles), *(f"{figure[e] / cycles:.1f}" for e in ("I1mr", "D1mr", "D1mw")))


if __name__ == "__main__":
    main()
