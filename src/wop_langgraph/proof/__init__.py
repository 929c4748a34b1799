"""Proof of what a run did: a hash chain over its event log, signed decision receipts and
checkpoints (DSSE envelopes over in-toto Statements, Ed25519), bundles an auditor verifies
offline with nothing but the public keys."""
