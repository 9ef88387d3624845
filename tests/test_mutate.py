"""tests/mutate.py's own contract: every survivor it explains is a mutant it still makes, of a
line its module still has (an explanation a change left behind explains nothing, and hides
that the line it was about is gone)."""
from __future__ import annotations

import mutate


def test_every_explained_survivor_is_a_mutant_of_the_code_as_it_is():
    made = {mutant.key
            for module in {module for module, _, _ in mutate.EXPLAINED} for mutant in mutate.mutants(module)}
    assert [entry for entry in mutate.EXPLAINED if entry not in made] == []
