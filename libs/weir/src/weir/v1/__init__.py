"""Generated protobuf and gRPC stubs for the weir.v1 API (`make proto`); do not edit by hand."""
