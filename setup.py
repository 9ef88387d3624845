"""The package's build (the rest of its configuration is pyproject.toml): the JSON Schemas
of the top-level schemas/, their one source, go into the package as
generator/catalogue/schemas/, where an installed `catalogue` finds them
(generator/catalogue/fields.py); the top-level package.json and package-lock.json, the
npm packages the hosts run here, as generator/hosts/npm/ (generator/hosts/npm.py). An
editable install reads the checkout's own."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# (where each goes in the built package: its files)
COPIED = {("generator", "catalogue", "schemas"): sorted((ROOT / "schemas").glob("*.json")),
          ("generator", "hosts", "npm"): [ROOT / "package.json", ROOT / "package-lock.json"]}


class build_py_with_copies(build_py):
    """build_py, then the schemas and the npm manifests copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for target, files in COPIED.items():
            self.mkpath(str(Path(self.build_lib, *target)))
            for file in files:
                self.copy_file(str(file), str(Path(self.build_lib, *target, file.name)))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return outputs + [str(Path(self.build_lib, *target, file.name)) for target, files in COPIED.items()
                          for file in files]


setup(cmdclass={"build_py": build_py_with_copies})
