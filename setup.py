"""The package's build (the rest of its configuration is pyproject.toml): the JSON Schemas
of the top-level schemas/, their one source, go into the package as
generator/catalogue/schemas/, where an installed `catalogue` finds them
(generator/catalogue/fields.py). An editable install reads the checkout's schemas/."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCHEMAS = Path(__file__).resolve().parent / "schemas"
TARGET = ("generator", "catalogue", "schemas")


class build_py_with_schemas(build_py):
    """build_py, then the schemas copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib, *TARGET)
        self.mkpath(str(target))
        for schema in sorted(SCHEMAS.glob("*.json")):
            self.copy_file(str(schema), str(target / schema.name))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return outputs + [str(Path(self.build_lib, *TARGET, p.name)) for p in sorted(SCHEMAS.glob("*.json"))]


setup(cmdclass={"build_py": build_py_with_schemas})
