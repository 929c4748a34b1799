"""The durable store: checkpoints, writes, the OpenWOP event log, interrupts, idempotency."""
