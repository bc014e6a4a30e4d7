"""The streams seed's gRPC API verbatim (`/waymaker.streams.WaymakerStreamsService/*`, the seed file
../shared/seeds/003 as is) over Weir: a seed stream is a one-partition Weir stream; see `mapping`
for the translations and what differs, `servicer` for what is served.
"""
