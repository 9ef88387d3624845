"""Single values under the rules of data.md."""
from __future__ import annotations

import pytest

from generator.catalogue.fields import FieldError, price


@pytest.mark.parametrize("given, written", [(0, "0"), ("0120", "120"), (" 1250000 ", "1250000"), (10**20, str(10**20))])
def test_price_is_a_string_of_digits(given, written):
    assert price(given) == written


@pytest.mark.parametrize("given", [True, 12.5, "12.5", "-1", "۱۲۰", ""])
def test_price_refuses(given):
    with pytest.raises(FieldError):
        price(given)
