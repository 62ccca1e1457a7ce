# A "system" Conan recipe: packages nothing, points at the Boost headers the OS installed
# (Debian: libboost-dev in /usr/include) and declares Conan Center's CMake names for the
# header-only part (file Boost, component `headers` -> Boost::headers). For verifying ipu's
# recipe offline; see docs/packaging.md.
import re

from conan import ConanFile
from conan.tools.files import load

INCLUDEDIR = "/usr/include"


class SystemBoostConan(ConanFile):
    name = "boost"
    description = "Boost headers from the system (no files packaged)"
    license = "BSL-1.0"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    # Accepted so that profiles written for Conan Center's boost (boost/*:header_only=True) work.
    options = {"header_only": [True, False]}
    default_options = {"header_only": True}

    def set_version(self):
        if not self.version:
            text = load(self, INCLUDEDIR + "/boost/version.hpp")
            v = int(re.search(r"#define BOOST_VERSION\s+([0-9]+)", text).group(1))
            self.version = f"{v // 100000}.{v // 100 % 1000}.{v % 100}"

    def package_id(self):
        self.info.clear()

    def package_info(self):
        # Everything is in the components; the package itself has no folders of its own.
        self.cpp_info.includedirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.bindirs = []
        self.cpp_info.set_property("cmake_file_name", "Boost")
        self.cpp_info.set_property("cmake_target_name", "Boost::boost")
        c = self.cpp_info.components["headers"]
        c.set_property("cmake_target_name", "Boost::headers")
        c.includedirs = [INCLUDEDIR]
        c.libdirs = []
        c.bindirs = []
