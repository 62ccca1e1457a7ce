# A "system" Conan recipe: packages nothing, points at the Eigen headers the OS installed
# (Debian: libeigen3-dev in /usr/include/eigen3) and declares the same CMake names as
# Conan Center's eigen recipe. For verifying ipu's recipe offline; see docs/packaging.md.
import re

from conan import ConanFile
from conan.tools.files import load

INCLUDEDIR = "/usr/include/eigen3"


class SystemEigenConan(ConanFile):
    name = "eigen"
    description = "Eigen from the system (no files packaged)"
    license = "MPL-2.0"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"

    def set_version(self):
        if not self.version:
            text = load(self, INCLUDEDIR + "/Eigen/src/Core/util/Macros.h")
            parts = [re.search(rf"#define EIGEN_{p}_VERSION\s+([0-9]+)", text).group(1)
                     for p in ("WORLD", "MAJOR", "MINOR")]
            self.version = ".".join(parts)

    def package_id(self):
        self.info.clear()

    def package_info(self):
        # Everything is in the components; the package itself has no folders of its own.
        self.cpp_info.includedirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.bindirs = []
        self.cpp_info.set_property("cmake_file_name", "Eigen3")
        self.cpp_info.set_property("cmake_target_name", "Eigen3::Eigen")
        self.cpp_info.set_property("pkg_config_name", "eigen3")
        c = self.cpp_info.components["eigen3"]
        c.set_property("cmake_target_name", "Eigen3::Eigen")
        c.includedirs = [INCLUDEDIR]
        c.libdirs = []
        c.bindirs = []
