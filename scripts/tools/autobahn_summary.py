#!/usr/bin/env python3
"""Summarise an Autobahn|Testsuite fuzzingclient report (index.json).

Usage:
    scripts/tools/autobahn_summary.py [INDEX_JSON] [--out FILE.md] [--agent NAME]
                                [--expected N]

Prints a Markdown summary (one table row per case group, every failing case
with its behavior, and a total line) and optionally writes it to --out.

A case passes when its `behavior` is OK, NON-STRICT or INFORMATIONAL *and* its
`behaviorClose` is OK or INFORMATIONAL. Everything else (FAILED,
UNIMPLEMENTED, WRONG CODE, ...) is a failure.

Exit status: 0 all cases pass, 1 at least one failure (or fewer cases than
--expected were reported), 2 the report is missing or unreadable.
Standard library only.
"""

import argparse
import json
import sys
from collections import OrderedDict

PASS_BEHAVIOR = ("OK", "NON-STRICT", "INFORMATIONAL")
PASS_CLOSE = ("OK", "INFORMATIONAL")

GROUP_NAMES = {
    "1": "Framing",
    "2": "Pings/Pongs",
    "3": "Reserved Bits",
    "4": "Opcodes",
    "5": "Fragmentation",
    "6": "UTF-8 Handling",
    "7": "Close Handling",
    "9": "Limits/Performance",
    "10": "Misc",
    "12": "Compression (permessage-deflate)",
    "13": "Compression (permessage-deflate params)",
}


def case_key(case_id):
    """Sort '1.1.10' after '1.1.9' and '10.1.1' after '9.x'."""
    key = []
    for part in case_id.split("."):
        try:
            key.append((0, int(part), ""))
        except ValueError:
            key.append((1, 0, part))
    return key


def is_failure(result):
    return (result.get("behavior") not in PASS_BEHAVIOR
            or result.get("behaviorClose") not in PASS_CLOSE)


def summarise_agent(agent, cases, expected=None):
    """Return (markdown_lines, n_failed, n_missing, n_total) for one agent."""
    groups = OrderedDict()
    failures = []
    for case_id in sorted(cases, key=case_key):
        result = cases[case_id]
        group = case_id.split(".", 1)[0]
        row = groups.setdefault(group, {"cases": 0, "OK": 0, "NON-STRICT": 0,
                                        "INFORMATIONAL": 0, "FAILED": 0})
        row["cases"] += 1
        if is_failure(result):
            row["FAILED"] += 1
            failures.append((case_id, result))
        else:
            row[result["behavior"]] += 1

    lines = []
    lines.append("## Autobahn|Testsuite fuzzingclient: %s" % agent)
    lines.append("")
    lines.append("| group | name | cases | OK | NON-STRICT | INFORMATIONAL "
                 "| FAILED/UNIMPLEMENTED |")
    lines.append("|---|---|---:|---:|---:|---:|---:|")
    tot = {"cases": 0, "OK": 0, "NON-STRICT": 0, "INFORMATIONAL": 0,
           "FAILED": 0}
    for group, row in groups.items():
        lines.append("| %s | %s | %d | %d | %d | %d | %d |" % (
            group, GROUP_NAMES.get(group, ""), row["cases"], row["OK"],
            row["NON-STRICT"], row["INFORMATIONAL"], row["FAILED"]))
        for k in tot:
            tot[k] += row[k]
    lines.append("| **total** | | **%d** | **%d** | **%d** | **%d** | **%d** |"
                 % (tot["cases"], tot["OK"], tot["NON-STRICT"],
                    tot["INFORMATIONAL"], tot["FAILED"]))
    lines.append("")

    missing = 0
    if expected is not None and tot["cases"] < expected:
        missing = expected - tot["cases"]
        lines.append("**Incomplete run:** %d case(s) expected, %d reported "
                     "(%d missing; did the server stop accepting "
                     "connections?)." % (expected, tot["cases"], missing))
        lines.append("")

    if failures:
        lines.append("### Failing cases (%d)" % len(failures))
        lines.append("")
        lines.append("| case | behavior | behaviorClose | remoteCloseCode "
                     "| duration ms | report |")
        lines.append("|---|---|---|---:|---:|---|")
        for case_id, r in failures:
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                case_id, r.get("behavior"), r.get("behaviorClose"),
                "-" if r.get("remoteCloseCode") is None
                else r.get("remoteCloseCode"), r.get("duration"),
                r.get("reportfile", "")))
        lines.append("")

    duration_ms = sum(int(r.get("duration") or 0) for r in cases.values())
    verdict = "PASS" if not failures and not missing else "FAIL"
    lines.append("Total: %d cases, %d OK, %d NON-STRICT, %d INFORMATIONAL, "
                 "%d FAILED/UNIMPLEMENTED%s (sum of case durations %.1f s) "
                 "-> %s" % (
                     tot["cases"], tot["OK"], tot["NON-STRICT"],
                     tot["INFORMATIONAL"], tot["FAILED"],
                     (", %d MISSING" % missing) if missing else "",
                     duration_ms / 1000.0, verdict))
    return lines, len(failures), missing, tot["cases"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", nargs="?",
                    default="LoadTests/reports/autobahn/index.json",
                    help="path to index.json (default: %(default)s)")
    ap.add_argument("--out", help="also write the Markdown summary here")
    ap.add_argument("--agent", help="only summarise this agent")
    ap.add_argument("--expected", type=int,
                    help="number of cases wstest said it would run; fewer "
                         "reported cases count as failures")
    args = ap.parse_args(argv)

    try:
        with open(args.index, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print("autobahn_summary: cannot read %s: %s" % (args.index, e),
              file=sys.stderr)
        return 2
    if not isinstance(report, dict):
        print("autobahn_summary: %s is not an Autobahn index.json"
              % args.index, file=sys.stderr)
        return 2

    agents = sorted(report)
    if args.agent and report:
        if args.agent not in report:
            print("autobahn_summary: agent %r not in %s (have: %s)"
                  % (args.agent, args.index, ", ".join(agents)),
                  file=sys.stderr)
            return 2
        agents = [args.agent]

    out_lines = ["# Autobahn|Testsuite summary", "",
                 "Source: `%s`" % args.index, ""]
    failed = 0
    missing = 0
    total = 0
    for agent in agents:
        lines, n_failed, n_missing, n_total = summarise_agent(
            agent, report[agent], args.expected)
        out_lines.extend(lines)
        out_lines.append("")
        failed += n_failed
        missing += n_missing
        total += n_total
    if total == 0:
        out_lines.append("**No test cases were reported** (could wstest "
                         "connect to the server?).")
        out_lines.append("")
        missing = max(missing, args.expected or 1)
    # Plain closing line in the generic "N passed, N failed" form that CI log
    # readers recognise (missing cases count as failed).
    out_lines.append("autobahn: %d passed, %d failed"
                     % (total - failed, failed + missing))

    text = "\n".join(out_lines).rstrip() + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
