"""What the query backends share (api/backends/common.py): the blocks a collection's index
files are cut in."""
from __future__ import annotations

from generator.api.backends.common import BLOCK, blocks


def test_a_collection_is_cut_in_as_few_blocks_as_hold_its_records():
    """The blocks a build writes index files for and reads in runs (one run a process): as
    many as hold the records, one (empty) for an empty collection, never an empty one more."""
    counts = (0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK)
    assert [list(blocks(count)) for count in counts] == [[0], [0], [0], [0], [0, 1], [0, 1, 2]]
