# Fails unless README.md's first ```cpp block is byte for byte examples/quickstart.cpp, so the program the
# README shows is the one ctest builds and runs.
#   cmake -DREADME=<README.md> -DQUICKSTART=<examples/quickstart.cpp> -P check_readme_quickstart.cmake
file(READ "${README}" readme)
file(READ "${QUICKSTART}" program)
string(FIND "${readme}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${README} has no ```cpp block; its first one must be ${QUICKSTART}")
endif()
math(EXPR start "${start} + 7")
string(SUBSTRING "${readme}" ${start} -1 rest)
string(FIND "${rest}" "\n```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the first ```cpp block is not closed")
endif()
math(EXPR end "${end} + 1")  # the block's last line keeps its newline, as the file's does
string(SUBSTRING "${rest}" 0 ${end} block)
if(NOT block STREQUAL program)
  message(FATAL_ERROR "README.md's first ```cpp block differs from examples/quickstart.cpp: copy the file into the "
                      "README verbatim (or change both)")
endif()
message(STATUS "README.md's quick start is examples/quickstart.cpp")
