"""The wheel's packages: the importable code (bert, app with its figure builders, benchmarks; pages/,
tests/ and scripts/ are run, not installed) and the built-in models and data of assets/, carried
inside it as bert/assets, where `bert.checkpoint.builtins.assets_folder` finds them once installed.
Everything else about the distribution is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["bert", "bert.*", "app", "app.*", "benchmarks", "benchmarks.*"]) + ["bert.assets"],
    package_dir={"bert.assets": "assets"},
    package_data={"bert.assets": ["**/*"]},
)
