# A "system" Conan recipe: packages nothing, points at the range-v3 headers the OS installed
# (Debian: librange-v3-dev in /usr/include) and declares Conan Center's CMake names
# (range-v3::range-v3 with components range-v3-meta and range-v3-concepts). For verifying
# ipu's recipe offline; see docs/packaging.md.
import re

from conan import ConanFile
from conan.tools.files import load

INCLUDEDIR = "/usr/include"


class SystemRangeV3Conan(ConanFile):
    name = "range-v3"
    description = "range-v3 from the system (no files packaged)"
    license = "BSL-1.0"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"

    def set_version(self):
        if not self.version:
            text = load(self, INCLUDEDIR + "/range/v3/version.hpp")
            parts = [re.search(rf"#define RANGE_V3_{p}\s+([0-9]+)", text).group(1)
                     for p in ("MAJOR", "MINOR", "PATCHLEVEL")]
            self.version = ".".join(parts)

    def package_id(self):
        self.info.clear()

    def package_info(self):
        # Everything is in the components; the package itself has no folders of its own.
        self.cpp_info.includedirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.bindirs = []
        self.cpp_info.set_property("cmake_file_name", "range-v3")
        self.cpp_info.set_property("cmake_target_name", "range-v3::range-v3")
        meta = self.cpp_info.components["range-v3-meta"]
        concepts = self.cpp_info.components["range-v3-concepts"]
        concepts.requires = ["range-v3-meta"]
        for c in (meta, concepts):
            c.includedirs = [INCLUDEDIR]
            c.libdirs = []
            c.bindirs = []
