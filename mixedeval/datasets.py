"""Bundled real evaluation data (published NLP studies), with licence and provenance.

``load(name)`` returns a fresh pandas DataFrame; ``list()`` describes the data sets. The files
and their provenance note (``PROVENANCE.md``) live in ``mixedeval/datasets_files/``.

``path("llm_inspect_logs")`` is a folder of Inspect AI logs (three mock models, two tasks;
written by ``scripts/make_llm_example.py``): read it with :func:`mixedeval.read_eval_logs` or
:func:`mixedeval.compare_logs`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd

from .errors import DataError


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    file: str
    rows: int
    description: str
    source: str
    licence: str
    categorical: tuple[str, ...] = ()


_SOURCE_KREUTZER = (
    "Kreutzer, Berger & Riezler (EAMT 2020), as released with Riezler & Hagmann, Validity, Reliability, "
    "and Significance (2021/2024), repository StatNLP/empirical_methods"
)

DATASETS: dict[str, DatasetInfo] = {
    "kreutzer_ter": DatasetInfo(
        "kreutzer_ter", "kreutzer_ter.csv", 7287,
        "Sentence-level TER of three NMT systems (Baseline; Marking and PostEdit, 3 seeds each) on 1,041 test "
        "sentences. Columns sentence_id, system, replication, ter, src_length.",
        _SOURCE_KREUTZER + ", machine_translation_example/data/data_ter.rds", "Apache-2.0",
        ("sentence_id", "system", "replication"),
    ),
    "kreutzer_annotation": DatasetInfo(
        "kreutzer_annotation", "kreutzer_annotation.csv", 300,
        "Annotation reliability study: 10 raters x 5 sentences x 3 occasions x 2 feedback modes; score is the "
        "fraction of marked / post-edited tokens. Columns mode, occasion, sentence, rater, score.",
        _SOURCE_KREUTZER + ", data_annotation.rds", "Apache-2.0",
        ("mode", "occasion", "sentence", "rater"),
    ),
    "kreutzer_hyperparameters": DatasetInfo(
        "kreutzer_hyperparameters", "kreutzer_hyperparameters_partial.parquet", 56214,
        "Sentence-level TER of the Marking system over a partial meta-parameter grid (54 trained instances x "
        "1,041 sentences). Columns ter, sentence_id, system, decoder_dropout, decoder_dropout_hidden, "
        "encoder_dropout, learning_rate, seed, delta_scheme, src_length, src_length_class. The published "
        "analysis keeps delta_scheme == '(-0.5:0.5)'.",
        _SOURCE_KREUTZER + ", data_hyperparameter-marking_partial.rds", "Apache-2.0",
        ("sentence_id", "system", "decoder_dropout", "decoder_dropout_hidden", "encoder_dropout",
         "learning_rate", "seed", "delta_scheme", "src_length_class"),
    ),
    "hu2025_records": DatasetInfo(
        "hu2025_records", "hu2025_model_performance_records.json", 1475,
        "Published scores of 13 multilingual models on 11 data sets (15 data set/metric pairs) and 53 "
        "languages. Columns model, language, score, dataset, metric, task (= 'dataset/metric'). 111 records "
        "have language == 'avg' (published averages, not observations): drop them before modelling.",
        "Hu, Vulic & Korhonen, Quantifying Language Disparities in Multilingual Large Language Models "
        "(EMNLP 2025), repository cambridgeltl/quantifying_language_disparities", "MIT",
        ("model", "language", "dataset", "metric", "task"),
    ),
}


#: bundled folders of evaluation-harness logs: name -> (folder in datasets_files/, description)
LOG_FOLDERS: dict[str, tuple[str, str]] = {
    "llm_inspect_logs": (
        "llm_inspect_logs",
        "Inspect AI .eval logs of three mock models (mockllm/small, mockllm/medium, mockllm/large) on two tasks "
        "(arithmetic, number_facts) of 60 questions in 20 clusters of 3 (sample metadata 'cluster'), 3 epochs, "
        "scorer match(); generated offline by scripts/make_llm_example.py (our own data, Apache-2.0). Read it with "
        "me.compare_logs(me.datasets.path('llm_inspect_logs'), metric='match', cluster='cluster').",
    ),
}


def _path(info: DatasetInfo) -> Path:
    return Path(str(resources.files("mixedeval") / "datasets_files" / info.file))


def list():  # noqa: A001 - the documented name
    """A table describing the bundled data sets (name, rows, description, source, licence, file)."""
    return pd.DataFrame(
        [
            {"name": i.name, "rows": i.rows, "description": i.description, "source": i.source,
             "licence": i.licence, "file": i.file}
            for i in DATASETS.values()
        ]
    )


def path(name: str) -> Path:
    """Path of the bundled file behind ``name``; for a folder of logs (``llm_inspect_logs``), the folder."""
    if name in LOG_FOLDERS:
        return Path(str(resources.files("mixedeval") / "datasets_files" / LOG_FOLDERS[name][0]))
    return _path(_info(name))


def sha256(name: str) -> str:
    """SHA-256 of the bundled file (for provenance blocks); of a folder, over its files' names and bytes."""
    p = path(name)
    if not p.is_dir():
        return hashlib.sha256(p.read_bytes()).hexdigest()
    h = hashlib.sha256()
    for f in sorted(q for q in p.iterdir() if q.is_file()):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _info(name: str) -> DatasetInfo:
    if name in LOG_FOLDERS:
        raise DataError(f"{name!r} is a folder of evaluation logs, not a table: read it with "
                        f"me.read_eval_logs(me.datasets.path({name!r})) or me.compare_logs(...)")
    try:
        return DATASETS[name]
    except KeyError:
        raise DataError(f"unknown data set {name!r}; available: {', '.join([*DATASETS, *LOG_FOLDERS])}") from None


def load(name: str):
    """Load a bundled data set as a new pandas DataFrame.

    Identifier-like columns (sentence ids, systems, seeds, raters, languages, ...) are strings, so
    they become factors in models; scores and lengths are floats/ints.
    """
    info = _info(name)
    p = _path(info)
    if p.suffix == ".csv":
        df = pd.read_csv(p, dtype={c: str for c in info.categorical})
    elif p.suffix == ".parquet":
        df = pd.read_parquet(p)
    else:
        with open(p, encoding="utf-8") as fh:
            records = json.load(fh)
        df = pd.DataFrame.from_records(records)
        df = df.rename(columns={c: c.lower() for c in df.columns})
        df["task"] = df["dataset"].astype(str) + "/" + df["metric"].astype(str)
    for c in info.categorical:
        if c in df.columns:
            df[c] = df[c].astype(object).where(df[c].notna(), None)
            df[c] = df[c].map(lambda v: v if v is None else str(v))
    if len(df) != info.rows:  # the bundled files are fixed: a mismatch means a damaged install
        raise DataError(f"bundled data set {name!r} has {len(df)} rows, expected {info.rows}; reinstall mixedeval")
    return df


__all__ = ["DATASETS", "LOG_FOLDERS", "DatasetInfo", "list", "load", "path", "sha256"]
