"""Reading a W&B offline run back: its transaction log (``run-*.wandb``) parsed into wandb's own protobuf Record
messages (``wandb.proto.wandb_internal_pb2``), for the --log-to tests."""

import json
import struct
from pathlib import Path

BLOCK = 32768
HEADER = 7  # ":W&B", a 2-byte magic and a version byte; then LevelDB log records (crc, length, type)


def wandb_records(path: Path):
    """The protobuf records of a W&B transaction log (``run-*.wandb``), parsed with wandb's own Record message."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, chunks = HEADER, []
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:  # a block's tail too short for a record header is padding
            pos += BLOCK - pos % BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunks.append(data[pos + 7:pos + 7 + length])
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(chunks))
            chunks = []
            yield record


def item_key(item) -> str:
    """An item's key: ``key``, or (as wandb 0.2x writes them) its ``nested_key`` joined by '/'."""
    return item.key or "/".join(item.nested_key)


def config_and_summary(path: Path) -> tuple[dict, dict]:
    config, summary = {}, {}
    for record in wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            config.update({item_key(i): json.loads(i.value_json) for i in record.run.config.update})
        elif kind == "config":
            config.update({item_key(i): json.loads(i.value_json) for i in record.config.update})
        elif kind == "summary":
            summary.update({item_key(i): json.loads(i.value_json) for i in record.summary.update
                            if item_key(i) and not item_key(i).startswith("_")})
        elif kind == "history":
            summary.update({item_key(i): json.loads(i.value_json) for i in record.history.item
                            if item_key(i) and not item_key(i).startswith("_")})
    return config, summary
