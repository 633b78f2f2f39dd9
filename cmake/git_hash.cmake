# Run at every build (not only at configure time): writes the commit the
# build is made from into OUT, and touches the file only when it changes, so
# that a new commit re-stamps every output file without rebuilding the rest.
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE hash OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT hash)
  set(hash "unknown")
else()
  # "+dirty" when the source differs from that commit (documentation, data
  # and reports aside): the build is then not exactly the commit's
  execute_process(COMMAND git diff --quiet HEAD -- . ":(exclude)*.md" ":(exclude)validation/reports" ":(exclude)configs"
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    set(hash "${hash}+dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/git_hash.cmake.\nnamespace ks::build {\nextern const char* const git_hash;\nconst char* const git_hash = \"${hash}\";\n}  // namespace ks::build\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
