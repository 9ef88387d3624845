"""Write a realistic synthetic catalogue of any size, deterministic for a seed.

For benchmarks and scale tests: Persian text of realistic length, about N/3
authors, N/10 publishers, a category tree of a few hundred nodes, N/4 users,
N/2 bookshelves and a few disabled books, with the quirks of the sample data.
Text is drawn from word lists and written directly (not through a YAML or CSV
library's slow paths) so that a million books take well under a minute.
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Iterator

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

COLUMNS = {
    "authors": ("id", "slug", "fullName", "bio"),
    "publishers": ("id", "slug", "company", "info"),
    "categories": ("id", "slug", "name", "code", "parent"),
    "users": ("id", "username", "first_name", "last_name", "bio", "following_count", "followers_count",
              "followed"),
    "books": ("id", "title", "isbn", "code", "code_qoq", "ddc", "price", "price_currency", "pages",
              "weight", "about", "comment_for_develop", "enable", "created_time", "authors",
              "translators", "publishers", "categories", "images"),
    "bookshelves": ("id", "user", "title"),
}
LISTS = {"authors", "translators", "publishers", "categories"}


class _Synth:
    def __init__(self, books: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.book_count = books
        self.counts = {
            "authors": max(books // 3, 1), "publishers": max(books // 10, 1),
            "users": max(books // 4, 1), "bookshelves": max(books // 2, 1),
        }

    def uuid(self) -> str:
        h = "%032x" % self.rng.getrandbits(128)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    def words(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(WORDS, k=self.rng.randint(low, high)))

    def sentences(self, low: int, high: int) -> str:
        return " ".join(self.words(6, 14) + "." for _ in range(self.rng.randint(low, high)))

    def ids(self, collection: str) -> list[str]:
        return [self.uuid() for _ in range(self.counts[collection])]

    def authors(self, ids: list[str]) -> Iterator[tuple]:
        rng = self.rng
        for n, id in enumerate(ids):
            first, last = rng.choice(FIRST), rng.choice(LAST)
            name = f"{first} {last}"
            if n % 97 == 5:
                name += " و دیگران"
            elif n % 89 == 3:
                name += " "  # a trailing space, as real exports have
            bio = "" if n % 3 == 0 else self.sentences(1, 3)
            yield id, f"{first}-{last}-{n}", name, bio

    def publishers(self, ids: list[str]) -> Iterator[tuple]:
        for n, id in enumerate(ids):
            word = self.rng.choice(WORDS)
            company = f"نشر {word} {n}" if n % 50 != 7 else f"نشر  {word} {n - 1}"  # spacing twins
            yield id, f"نشر-{word}-{n}", company, "" if n % 2 else self.sentences(1, 2)

    def categories(self) -> Iterator[tuple]:
        def node(parent: str, depth: int, number: int):
            id = self.uuid()
            name = self.words(1, 2)
            code = "" if number % 4 == 3 else f"{depth}{number:03d}"
            return id, f"دسته-{depth}-{number}-{len(self.category_ids)}", name, code, parent

        self.category_ids = []
        for t in range(TOP_CATEGORIES):
            top = node("", 1, t)
            self.category_ids.append(top[0])
            yield top
            for s in range(SUB_CATEGORIES):
                sub = node(top[0], 2, s)
                self.category_ids.append(sub[0])
                yield sub
                for leaf in range(LEAF_CATEGORIES):
                    row = node(sub[0], 3, leaf)
                    self.category_ids.append(row[0])
                    yield row

    def users(self, ids: list[str]) -> Iterator[tuple]:
        rng = self.rng
        for n, id in enumerate(ids):
            username = (f"{rng.choice(LETTERS)}{rng.choice(LETTERS)}.{n}" if n % 5
                        else f"{rng.choice(FIRST)}_{n}")
            yield (id, username, rng.choice(FIRST), rng.choice(LAST) if n % 7 else "",
                   "" if n % 2 else self.sentences(1, 2), rng.randint(0, 300), rng.randint(0, 900),
                   "true" if n % 11 == 0 else "false")

    def bookshelves(self, ids: list[str], users: list[str]) -> Iterator[tuple]:
        for id in ids:
            yield id, self.rng.choice(users), self.words(1, 4)

    def books(self, authors: list[str], publishers: list[str]) -> Iterator[tuple]:
        rng = self.rng
        categories = self.category_ids
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


def write(out: Path, books: int, seed: int = 1, fmt: str = "csv") -> dict[str, int]:
    """Write site.yaml and the six collections to out; the number of records of each."""
    out.mkdir(parents=True, exist_ok=True)
    synth = _Synth(books, seed)
    author_ids, publisher_ids = synth.ids("authors"), synth.ids("publishers")
    user_ids, shelf_ids = synth.ids("users"), synth.ids("bookshelves")
    write_rows = _write_csv if fmt == "csv" else _write_yaml
    counts = {}
    for collection, rows in (
        ("categories", synth.categories()),
        ("publishers", synth.publishers(publisher_ids)),
        ("authors", synth.authors(author_ids)),
        ("users", synth.users(user_ids)),
        ("books", synth.books(author_ids, publisher_ids)),
        ("bookshelves", synth.bookshelves(shelf_ids, user_ids)),
    ):
        for stale in ("csv", "yaml"):
            (out / f"{collection}.{stale}").unlink(missing_ok=True)
        counts[collection] = write_rows(out / f"{collection}.{fmt}", COLUMNS[collection], rows)
    (out / "site.yaml").write_text(
        "base_url: https://ketab.example.ir\n"
        f"page_sizes: [{', '.join(map(str, PAGE_SIZES))}]\ntime_zone: Asia/Tehran\n", encoding="utf-8")
    return counts


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

