"""What a term index (api/backends/search_index.py) holds, read through its root and
leaves: what an edited index and a fresh build's must hold alike, where their postings
files may lie otherwise (an edit lays them out by history)."""
from __future__ import annotations

from generator.api.backends import search_index as ti


def holds(files: dict[str, bytes], specs: list[str]) -> dict[tuple[bytes, int], tuple[int, list[int], bool]]:
    """Every key's set in every field (its size class, its codes, whether its leaf holds it),
    read through the root and leaves."""
    root = ti.Root.decode(files[ti.ROOT])
    editor = ti._Editor(files.get, ti.index_fields(specs), root.count)
    found = {}
    for _, name in ti._all_leaves(files.get, root)[0]:
        laid_out_as_written(files[ti.leaf_file(name)])
        for key, pieces in ti._key_list(files[ti.leaf_file(name)], len(ti.LEAF_MAGIC), ti._stored_pieces):
            for piece in pieces:
                relation = editor.fields[piece.field].relation is not None
                found[key, piece.field] = (piece.size_class, editor.codes(piece, relation).tolist(),
                                           piece.data is not None)
    return found


def laid_out_as_written(leaf: bytes) -> None:
    """A leaf's bytes are its keys and entries put one after another in a new key list:
    front-coded, a restart (what a reader bisects) every RESTART keys, as a writer lays them
    out (an edit that keeps a leaf's head as it was must too)."""
    out = ti._KeyList()
    for key, entry in ti._key_list(leaf, len(ti.LEAF_MAGIC), ti._entry_bytes):
        ti._entry(out.put(key), entry)
    assert ti.LEAF_MAGIC + out.encoded() == leaf
