import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir

required_conan_version = ">=2.0"


class IpuConan(ConanFile):
    name = "ipu"
    description = ("Header-only C++20 library: neural-network graphs for the IPU as types, "
                   "planned and checked at compile time")
    license = "BSL-1.0"
    topics = ("header-only", "neural-network", "graph", "compile-time", "ipu")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "CMakeLists.txt", "LICENSE", "cmake/*", "include/*"
    no_copy_source = True

    def set_version(self):
        # Single source of truth: project(ipu VERSION x.y.z) in CMakeLists.txt.
        cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        match = re.search(r"project\s*\(\s*ipu\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", cmakelists)
        if not match:
            raise RuntimeError("CMakeLists.txt has no `project(ipu VERSION x.y.z ...)`")
        self.version = match.group(1)

    def layout(self):
        cmake_layout(self)

    def package_id(self):
        self.info.clear()

    def requirements(self):
        # Checkpoints' headers (ipu/checkpoint.hpp); keep in step with CMakeLists.txt.
        self.requires("nlohmann_json/[>=3.10 <4]")

    def validate(self):
        check_min_cppstd(self, 20)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["IPU_BUILD_TESTS"] = False
        tc.cache_variables["IPU_BUILD_BENCHMARKS"] = False
        tc.cache_variables["IPU_BUILD_EXAMPLES"] = False
        tc.cache_variables["IPU_BUILD_DOCS"] = False
        tc.cache_variables["IPU_INSTALL"] = True
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        pass  # header-only: nothing to compile

    def package(self):
        # The project's own install rules decide what is installed.
        cmake = CMake(self)
        cmake.configure()
        cmake.install()
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        # CMakeDeps and PkgConfigDeps generate these for Conan users; drop the upstream ones.
        rmdir(self, os.path.join(self.package_folder, "share"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "ipu")
        self.cpp_info.set_property("cmake_target_name", "ipu::ipu")
        self.cpp_info.set_property("pkg_config_name", "ipu")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.requires = ["nlohmann_json::nlohmann_json"]
