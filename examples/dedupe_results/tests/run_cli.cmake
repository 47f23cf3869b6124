# Runs the installed `compactor run` with a config that loads the example's plugins, and compares
# its output with the golden file. -DCLI -DCONFIG (a .yaml.in) -DPLUGINS -DINPUT -DEXPECTED -DWORK
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
configure_file(${CONFIG} ${WORK}/config.yaml @ONLY)
execute_process(COMMAND ${CLI} run --config ${WORK}/config.yaml --input ${INPUT} --output ${WORK}/output.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compactor run exited ${rc}:\n${out}${err}")
endif()
file(READ ${WORK}/output.json actual)
file(READ ${EXPECTED} expected)
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "${WORK}/output.json differs from ${EXPECTED}:\n${actual}")
endif()
if(NOT out MATCHES "dedupe_results +committed")
  message(FATAL_ERROR "the run summary does not show dedupe_results committed:\n${out}")
endif()
message(STATUS "compactor run with ${CONFIG}: output equals the golden file")
