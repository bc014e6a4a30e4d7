"""Added latency for the network fault tests where the kernel has no `netem` (this one's
CONFIG_NET_SCH_NETEM is off): an nftables rule in a host's namespace hands every packet the host
sends to NFQUEUE queue QUEUE (`queue num QUEUE bypass`), and this program, run inside the same
namespace, holds each packet in the kernel's queue for DELAY_MS before it lets it go (the verdict
is given late; the packet itself never leaves the kernel). Order is kept (one constant delay).
With `bypass`, packets pass undelayed once this program is gone.

Run as `python tests/netem_delay.py QUEUE DELAY_MS` with the NetfilterQueue package (PyPI
`netfilterqueue`, Debian's libnetfilter-queue to build it: the tests give it a virtualenv of its own,
tests/network_namespaces.py). Prints "ready" once bound. At most MAX_HELD packets wait in the kernel
(the queue's length); more are dropped by the kernel, as a full netem queue would.
"""

from __future__ import annotations

import collections
import select
import sys
import time

from netfilterqueue import NetfilterQueue, Packet  # type: ignore[import-not-found,unused-ignore]

MAX_HELD = 10_000


def main(queue: int, delay_ms: int) -> None:
    delay_s = delay_ms / 1000
    held: collections.deque[tuple[float, Packet]] = collections.deque()

    def arrived(packet: Packet) -> None:
        held.append((time.monotonic() + delay_s, packet))

    nfqueue = NetfilterQueue()
    nfqueue.bind(queue, arrived, max_len=MAX_HELD)
    descriptor = nfqueue.get_fd()
    print("ready", flush=True)
    while True:
        now = time.monotonic()
        while held and held[0][0] <= now:
            held.popleft()[1].accept()
        wait_s = max(0.0, held[0][0] - now) if held else 0.5
        readable, _, _ = select.select([descriptor], [], [], wait_s)
        if readable:
            nfqueue.run(block=False)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
