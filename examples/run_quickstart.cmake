# Runs the quick start as a user would (in the working directory) and checks what it promises: it exits
# cleanly, prints a plausible test accuracy and saves fashion_mnist.keras.
#   cmake -DPROGRAM=<quickstart> -P run_quickstart.cmake
file(REMOVE fashion_mnist.keras)
execute_process(COMMAND "${PROGRAM}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "quickstart exited with ${rc}")
endif()
if(NOT out MATCHES "test accuracy: 0\\.[6-9]")
  message(FATAL_ERROR "quickstart printed no test accuracy of at least 0.6")
endif()
if(NOT EXISTS fashion_mnist.keras)
  message(FATAL_ERROR "quickstart did not write fashion_mnist.keras")
endif()
