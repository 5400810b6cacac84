"""Data layer: dataset readers, harmonized records, splits, the prepared image cache."""

from focus_eval.data.records import TARGETS, DatasetLoad, ImageRecord, Skipped

__all__ = ["TARGETS", "DatasetLoad", "ImageRecord", "Skipped"]
