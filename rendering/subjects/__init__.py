"""Digital subjects: procedural phantoms (dev, s01..s30) and imported label maps.

    from rendering.subjects import load_runtime, list_subjects, SubjectRuntime, SubjectError
    rt = load_runtime("dev")

Frame: DICOM LPS patient frame in mm (+x patient left, +y posterior, +z superior), supine,
head first.  x = 0 at the body midline, y = 0 at the table top (body at y < 0), z = 0 at
the jugular notch.  labels[k, j, i] is at (ox + i*sx, oy + j*sy, oz + k*sz).
See rendering/subjects/README.md for the bundle format and the tissue tables.
Consoles read only this runtime half; the oracle half is read by scoring/subject_oracle.py.
"""
from .bundle import SubjectError
from .version import GENERATOR_VERSION
from .runtime import SubjectRuntime, build_procedural, list_subjects, load_runtime
from .tissues import COMPARTMENTS, TissueTable

__all__ = ["load_runtime", "list_subjects", "SubjectRuntime", "SubjectError", "TissueTable", "COMPARTMENTS",
           "GENERATOR_VERSION", "build_procedural"]
