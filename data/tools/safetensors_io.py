"""The course's one safetensors writer for Python scripts (training export and test fixtures).

Layout: 8-byte little-endian header length, a JSON header of named F32 tensors with shape and
data offsets (plus string metadata), padded with spaces so the data starts 8-byte aligned, then
the raw little-endian float32 data. common/include/course/safetensors.hpp reads it in C++.
"""
import json
import struct

import torch


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().contiguous().to(torch.float32).numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
