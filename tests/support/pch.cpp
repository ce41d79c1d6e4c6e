// Compiles tests/CMakeLists.txt's precompiled header, which every test executable reuses.
