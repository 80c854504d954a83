"""The accelerator catalog: data files, validation and name lookup."""

from suanli.catalog.gpu import GPU, PRECISION_FIELDS, Source
from suanli.catalog.loader import CatalogError, bundled_gpus, load_catalog, read_catalog_file
from suanli.catalog.lookup import find_gpu

__all__ = [
    "GPU",
    "PRECISION_FIELDS",
    "CatalogError",
    "Source",
    "bundled_gpus",
    "find_gpu",
    "load_catalog",
    "read_catalog_file",
]
