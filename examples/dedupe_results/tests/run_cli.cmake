# Runs the installed `compactor run`, in a folder of its own, with a config that loads the
# example's plugins, and compares its output with the golden file; then prints the resolved
# pipeline and reads it again, validated and printed, from another folder: the same text.
# -DCLI -DCONFIG (a .yaml.in) -DPLUGINS -DINPUT -DEXPECTED -DWORK
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK} ${WORK}/elsewhere)
configure_file(${CONFIG} ${WORK}/config.yaml @ONLY)
execute_process(COMMAND ${CLI} run --config config.yaml --input ${INPUT} --output output.json WORKING_DIRECTORY ${WORK}
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
if(NOT err STREQUAL "")
  message(FATAL_ERROR "compactor run warned:\n${err}")
endif()
execute_process(COMMAND ${CLI} print-pipeline --config config.yaml WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_FILE ${WORK}/resolved.yaml ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compactor print-pipeline exited ${rc}:\n${err}")
endif()
execute_process(COMMAND ${CLI} print-pipeline --config ../resolved.yaml WORKING_DIRECTORY ${WORK}/elsewhere
                RESULT_VARIABLE rc OUTPUT_VARIABLE again ERROR_VARIABLE err)
file(READ ${WORK}/resolved.yaml resolved)
if(NOT rc EQUAL 0 OR NOT again STREQUAL resolved)
  message(FATAL_ERROR "the printed pipeline, read from another folder, is not the same (exit ${rc}):\n${err}${again}")
endif()
if(NOT resolved MATCHES "checker: \"no_new_secrets\"\n      plugin: \"[^\"]*/compactor_checker_no_new_secrets.so\"")
  message(FATAL_ERROR "the printed pipeline does not resolve the checker plugin to its file:\n${resolved}")
endif()
message(STATUS "compactor run with ${CONFIG}: output equals the golden file; its printed pipeline is a fixed point")
