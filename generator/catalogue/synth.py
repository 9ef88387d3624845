"""Write a realistic synthetic catalogue of any size, deterministic for a seed.

For benchmarks and scale tests: Persian text of realistic length, about N/3
authors, N/10 publishers, a category tree of a few hundred nodes, N/4 users,
N/2 bookshelves and a few disabled books, with the quirks of the sample data.
Text is drawn from word lists and written directly (not through a YAML or CSV
library's slow paths) so that a million books take well under a minute. By default the
words come from a few hundred; with `vocabulary`, titles, names and the rest draw from that
many distinct words with Zipf's law (the word of rank r about 1/r as often as the most
common), as a real catalogue's text is: a few words in many records, most in one or two.
Prose (bios, abouts), which nothing searches, keeps the few hundred words.
Every declared collection (resources.py) is written, in the columns of its fields: the
six above by the makers below, any other from its fields' kinds.
"""
from __future__ import annotations

import csv
import itertools
import json
import random
from pathlib import Path
from typing import Any, Callable, Iterator

from .fields import (Field, boolean, currency, id_list, image_list, isbn, nonempty_text, price, slug, text,
                     timestamp, username, uuid_id, whole)
from .resources import BUILD_ORDER, BY_COLLECTION, Resource

WORDS = (
    "کتاب دریا شب روز خانه باران آینه سایه راه سفر دل جان عشق زمان شهر کوه باغ گل ستاره ماه خورشید "
    "آسمان زمین آتش آب باد خاک نور رنگ صدا سکوت خاطره رویا قصه افسانه تاریخ فلسفه شعر رمان نامه دفتر "
    "پنجره کوچه بازار مدرسه کودک پدر مادر برادر خواهر دوست مسافر شاعر نویسنده معلم کارگر کشاورز "
    "پاییز زمستان بهار تابستان جنگل بیابان رود دشت ساحل جزیره قلعه کاروان سرزمین مردم روستا "
    "آزادی امید تنهایی انتظار حقیقت زندگی مرگ بازگشت آغاز پایان فردا دیروز هزار یک دو سه چهل "
    "سپید سیاه سرخ سبز آبی طلایی کهنه نو بزرگ کوچک دور نزدیک پنهان گمشده خاموش بیدار"
).split()
FIRST = ("علی محمد حسین رضا مهدی امیر سعید حمید مجید بهرام کامران فرهاد سیاوش داریوش کیوان "
         "مریم زهرا فاطمه سارا نگار پریسا شیرین لیلا مینا رویا سیمین فروغ گلی نسرین الهام").split()
LAST = ("احمدی رضایی کریمی حسینی محمدی موسوی صادقی تهرانی شیرازی اصفهانی تبریزی کرمانی "
        "یزدی قاسمی رستمی نوروزی جعفری حیدری عباسی مرادی دولتی فرخی سپهری شاملو دانشور").split()
LETTERS = "abcdefghijklmnopqrstuvwxyz"
FORMATS = ("رقعی", "وزیری", "پالتویی", "جیبی", "خشتی")
COVERS = ("شومیز", "گالینگور")
STOCK = ("موجود", "ناموجود", "تماس بگیرید")
OFFSETS = ("+03:30", "+04:30", "Z", "+00:00", "+02:00")
PERSIAN_DIGITS = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")
TOP_CATEGORIES, SUB_CATEGORIES, LEAF_CATEGORIES = 12, 5, 5  # 12 + 60 + 300 nodes
PAGE_SIZES = (12, 24)
# Books per record of the collections whose ids are drawn before any row is written, in
# the order they are drawn (the random draws follow the order: a seed writes the same files).
BOOKS_PER = {"authors": 3, "publishers": 10, "users": 4, "bookshelves": 2}
OTHERS_PER_BOOK = 0.5  # records of a collection no maker knows, per book
# Letters of made-up words, each as often as in Persian text, roughly (alef, yeh, vav and
# the common consonants first), and how long a word is (2 to 9 letters, most 4 to 6).
LETTER_WEIGHTS = {"ا": 12, "ی": 10, "ر": 7, "د": 7, "ن": 7, "م": 6, "و": 6, "ه": 6, "ت": 5, "ب": 5, "س": 4,
                  "ک": 4, "ش": 3, "ل": 4, "ز": 2, "گ": 2, "ف": 2, "خ": 2, "ج": 1, "ق": 1, "پ": 1, "ح": 1,
                  "ع": 1, "چ": 1, "ص": 1, "ط": 1, "غ": 1, "ژ": 1, "ث": 1, "ض": 1, "ظ": 1, "ذ": 1}
WORD_LENGTHS = {2: 2, 3: 6, 4: 10, 5: 10, 6: 8, 7: 5, 8: 3, 9: 1}
ZIPF_EXPONENT = 1.0


class Vocabulary:
    """`size` distinct words drawn by Zipf's law: the real word lists first (the most common
    ranks), then made-up words of Persian letters. The same size and seed make the same words."""

    def __init__(self, size: int, seed: int) -> None:
        rng = random.Random(f"vocabulary {seed}")
        words = dict.fromkeys(WORDS + FIRST + LAST)
        letters, weights = list(LETTER_WEIGHTS), list(LETTER_WEIGHTS.values())
        lengths, length_weights = list(WORD_LENGTHS), list(WORD_LENGTHS.values())
        while len(words) < size:  # (in batches: a draw of one letter at a time takes seconds)
            batch = size - len(words)
            spelled = iter(rng.choices(letters, weights, k=batch * 9))
            for length in rng.choices(lengths, length_weights, k=batch):
                words["".join(itertools.islice(spelled, length))] = None
        self.words = list(words)[:size]
        self.cumulative = list(itertools.accumulate(1 / rank ** ZIPF_EXPONENT for rank in range(1, size + 1)))

    def draw(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=k)


class _Synth:
    def __init__(self, books: int, seed: int, vocabulary: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.book_count = books
        self.ids: dict[str, list[str]] = {}  # of each collection drawn or written so far
        self.vocabulary = Vocabulary(vocabulary, seed) if vocabulary else None

    def draw_ids(self) -> None:
        for collection, per in BOOKS_PER.items():
            self.ids[collection] = [self.uuid() for _ in range(max(self.book_count // per, 1))]

    def rows(self, resource: Resource) -> Iterator[tuple]:
        """The rows of a collection, in the columns of its fields."""
        maker = MAKERS.get(resource.collection)
        return maker(self) if maker is not None else self.from_kinds(resource)

    def uuid(self) -> str:
        h = "%032x" % self.rng.getrandbits(128)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    def words(self, low: int, high: int) -> str:
        count = self.rng.randint(low, high)
        if self.vocabulary is not None:
            return " ".join(self.vocabulary.draw(self.rng, count))
        return " ".join(self.rng.choices(WORDS, k=count))

    def name(self, names: tuple[str, ...]) -> str:
        """A first or last name: from the vocabulary when there is one (a real catalogue's
        names are as many and as skewed as its words)."""
        if self.vocabulary is not None:
            return self.vocabulary.draw(self.rng, 1)[0]
        return self.rng.choice(names)

    def sentences(self, low: int, high: int) -> str:
        """Prose (a bio, a book's about): from the few hundred words alone, vocabulary or not
        (nothing searches it, and a million books' prose drawn by Zipf's law takes a minute)."""
        return " ".join(" ".join(self.rng.choices(WORDS, k=self.rng.randint(6, 14))) + "."
                        for _ in range(self.rng.randint(low, high)))

    def authors(self) -> Iterator[tuple]:
        for n, id in enumerate(self.ids["authors"]):
            first, last = self.name(FIRST), self.name(LAST)
            name = f"{first} {last}"
            if n % 97 == 5:
                name += " و دیگران"
            elif n % 89 == 3:
                name += " "  # a trailing space, as real exports have
            bio = "" if n % 3 == 0 else self.sentences(1, 3)
            yield id, f"{first}-{last}-{n}", name, bio

    def publishers(self) -> Iterator[tuple]:
        for n, id in enumerate(self.ids["publishers"]):
            word = self.name(WORDS)
            company = f"نشر {word} {n}" if n % 50 != 7 else f"نشر  {word} {n - 1}"  # spacing twins
            yield id, f"نشر-{word}-{n}", company, "" if n % 2 else self.sentences(1, 2)

    def categories(self) -> Iterator[tuple]:
        def node(parent: str, depth: int, number: int):
            id = self.uuid()
            name = self.words(1, 2)
            code = "" if number % 4 == 3 else f"{depth}{number:03d}"
            return id, f"دسته-{depth}-{number}-{len(made)}", name, code, parent

        made = []  # the ids so far, whose number each slug holds
        for t in range(TOP_CATEGORIES):
            top = node("", 1, t)
            made.append(top[0])
            yield top
            for s in range(SUB_CATEGORIES):
                sub = node(top[0], 2, s)
                made.append(sub[0])
                yield sub
                for leaf in range(LEAF_CATEGORIES):
                    row = node(sub[0], 3, leaf)
                    made.append(row[0])
                    yield row

    def users(self) -> Iterator[tuple]:
        rng = self.rng
        for n, id in enumerate(self.ids["users"]):
            username = (f"{rng.choice(LETTERS)}{rng.choice(LETTERS)}.{n}" if n % 5
                        else f"{rng.choice(FIRST)}_{n}")
            yield (id, username, rng.choice(FIRST), rng.choice(LAST) if n % 7 else "",
                   "" if n % 2 else self.sentences(1, 2), rng.randint(0, 300), rng.randint(0, 900),
                   "true" if n % 11 == 0 else "false")

    def bookshelves(self) -> Iterator[tuple]:
        users = self.ids["users"]
        for id in self.ids["bookshelves"]:
            yield id, self.rng.choice(users), self.words(1, 4)

    def books(self) -> Iterator[tuple]:
        rng = self.rng
        authors, publishers, categories = self.ids["authors"], self.ids["publishers"], self.ids["categories"]
        for n in range(self.book_count):
            id = self.uuid()
            body = f"978{n:09d}"
            check = (10 - sum((1 if i % 2 == 0 else 3) * int(c) for i, c in enumerate(body)) % 10) % 10
            isbn = body + str(check)
            price = rng.randint(3, 400) * 10000
            pages = rng.randint(40, 900) if n % 13 else 0
            year = str(rng.randint(1370, 1403)).translate(PERSIAN_DIGITS)
            comment = "" if n % 9 == 4 else "\n".join((
                f"تاریخ انتشار: {year}",
                f"نوبت چاپ: {str(rng.randint(1, 40)).translate(PERSIAN_DIGITS)}",
                f"تیراژ: {str(rng.choice((300, 500, 550, 1000, 1100, 2200))).translate(PERSIAN_DIGITS)}",
                f"قطع: {rng.choice(FORMATS)}", f"نوع جلد: {rng.choice(COVERS)}",
                f"نام گروه: {rng.choice(WORDS)}",
                f"قیمت: {format(price // 10, ',').translate(PERSIAN_DIGITS)} تومان",
                f"موجودی: {rng.choice(STOCK)}"))
            moment = (f"{rng.randint(2015, 2024)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                      f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                      + (f".{rng.randint(1, 999999):06d}" if n % 3 == 0 else "") + rng.choice(OFFSETS))
            images = [f"https://static.ketab.example.ir/media/books/{isbn}/{k}.jpg"
                      for k in range(rng.choice((0, 1, 1, 1, 2)))]
            yield (
                id, self.words(1, 5), isbn, f"B{n}" if n % 4 else "",
                str(rng.randrange(10**7, 10**8)) if n % 3 == 0 else "", f"8fa{rng.randint(1, 9)}.{rng.randint(1, 99)}"
                if n % 2 else "", price, "IRR" if n % 8 else "", pages, pages * rng.choice((1, 2)),
                self.sentences(0, 4) if n % 5 else "", comment, "false" if n % 997 == 13 else "true", moment,
                rng.sample(authors, rng.choice((1, 1, 1, 2, 3))),
                rng.sample(authors, 1) if n % 3 == 0 else [],
                rng.sample(publishers, rng.choice((1, 1, 2))),
                rng.sample(categories, rng.choice((0, 1, 1, 2, 3))),
                images,
            )


    # ---- any other collection --------------------------------------------------------------

    def from_kinds(self, resource: Resource) -> Iterator[tuple]:
        """Rows of a collection no maker knows, each value drawn as its field's kind asks."""
        for n in range(max(int(self.book_count * OTHERS_PER_BOOK), 1)):
            yield tuple(self.value(f, n) for f in resource.fields)

    def value(self, field: Field, n: int) -> Any:
        """A value of the field for the n-th record: a related record's id (or a few), else
        one its coercer takes."""
        if field.to is None:
            return KINDS[field.coerce](self, n)
        targets = self.ids.get(field.to)
        if not targets:
            return [] if field.many else ""  # (a node of a tree without a parent)
        if field.many:
            return self.rng.sample(targets, min(len(targets), self.rng.randint(0, 3)))
        return self.rng.choice(targets)


# The collections written by the makers above, in the order they are written; any other
# declared collection follows, in the build's order.
MAKERS: dict[str, Callable[[_Synth], Iterator[tuple]]] = {
    "categories": _Synth.categories, "publishers": _Synth.publishers, "authors": _Synth.authors,
    "users": _Synth.users, "books": _Synth.books, "bookshelves": _Synth.bookshelves,
}
# A value of each kind of field, for the n-th record of a collection no maker knows.
KINDS: dict[Callable[[Any], Any], Callable[[_Synth, int], Any]] = {
    uuid_id: lambda s, n: s.uuid(), slug: lambda s, n: f"slug-{n}", username: lambda s, n: f"user_{n}",
    text: lambda s, n: s.sentences(0, 2), nonempty_text: lambda s, n: s.words(1, 5),
    isbn: lambda s, n: f"978{n:010d}", currency: lambda s, n: "IRR", whole: lambda s, n: s.rng.randint(0, 999),
    price: lambda s, n: s.rng.randint(1, 400) * 10000, boolean: lambda s, n: "true" if n % 2 else "false",
    timestamp: lambda s, n: f"20{s.rng.randint(15, 24)}-{s.rng.randint(1, 12):02d}-{s.rng.randint(1, 28):02d}"
                            f"T{s.rng.randint(0, 23):02d}:00:00+03:30",
    id_list: lambda s, n: [], image_list: lambda s, n: [],
}


def write(out: Path, books: int, seed: int = 1, fmt: str = "csv", vocabulary: int | None = None) -> dict[str, int]:
    """Write site.yaml and every collection to out; the number of records of each. With
    `vocabulary`, the text draws from that many words by Zipf's law."""
    out.mkdir(parents=True, exist_ok=True)
    synth = _Synth(books, seed, vocabulary)
    synth.draw_ids()
    write_rows = _write_csv if fmt == "csv" else _write_yaml
    counts = {}
    written = [BY_COLLECTION[c] for c in MAKERS] + [r for r in BUILD_ORDER if r.collection not in MAKERS]
    for resource in written:
        collection = resource.collection
        for stale in ("csv", "yaml"):
            (out / f"{collection}.{stale}").unlink(missing_ok=True)
        ids: list[str] = []
        rows = _noting_ids(synth.rows(resource), ids)
        counts[collection] = write_rows(out / f"{collection}.{fmt}", tuple(f.name for f in resource.fields), rows)
        synth.ids[collection] = ids
    (out / "site.yaml").write_text(
        "base_url: https://ketab.example.ir\n"
        f"page_sizes: [{', '.join(map(str, PAGE_SIZES))}]\ntime_zone: Asia/Tehran\n", encoding="utf-8")
    return counts


def _noting_ids(rows: Iterator[tuple], ids: list[str]) -> Iterator[tuple]:
    """The rows, each one's id (its first column) noted as it is written, for the collections
    written later to refer to."""
    for row in rows:
        ids.append(row[0])
        yield row


def _cell(value) -> str:
    return "|".join(value) if isinstance(value, list) else str(value)


def _write_csv(path: Path, columns: tuple, rows: Iterator[tuple]) -> int:
    count = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(v) for v in row])
            count += 1
    return count


def _yaml_value(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    if isinstance(value, int) or value in ("true", "false"):
        return str(value)
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _write_yaml(path: Path, columns: tuple, rows: Iterator[tuple]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            fields = [(c, v) for c, v in zip(columns, row) if v != "" and v != []]
            f.write("- " + "\n  ".join(f"{c}: {_yaml_value(v)}" for c, v in fields) + "\n")
            count += 1
    return count

