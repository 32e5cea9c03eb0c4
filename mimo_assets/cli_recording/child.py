"""The process that records a CLI run into Dagster: `python -m mimo_assets.cli_recording.child`.

Its own process, so `import dagster` and the event-log writes never take the CLI's GIL from the rollout
threads. Protocol on stdin, one JSON object a line: first a RecordingHeader (the RunRequest and the planned rollouts),
then one ResultRecord per finished rollout, then END_OF_RUN; end of input ends the run (without END_OF_RUN
the CLI died, and the run fails after recording what it finished). Exit status 0 when recorded.
"""

from __future__ import annotations

import signal
import sys
import threading

from mimo_assets.cli_recording.feed import END_OF_RUN, Feed, RecordingHeader
from mimo_core.results import ResultRecord


def _pump(feed: Feed) -> None:
    try:
        for line in sys.stdin:
            if line.strip() == END_OF_RUN:
                feed.complete = True
            elif line.strip():
                feed.put(ResultRecord.model_validate_json(line))
    finally:
        feed.close()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the CLI; we stop at end of input
    feed = Feed(RecordingHeader.model_validate_json(sys.stdin.readline()))
    threading.Thread(target=_pump, args=(feed,), name="mimo-record-stdin", daemon=True).start()
    from mimo_assets.cli_recording.record import execute_feed

    error = execute_feed(feed)
    if error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
