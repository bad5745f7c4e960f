# gradsync's libraries as a CMake package, as Gloo, gRPC and Abseil ship
# theirs. `cmake --install BUILD --component dev [--prefix P]` (and the
# Debian package gradsync-dev) installs
#   P/include/gradsync/...            the headers, by their repository paths
#                                     ("collectives/...", "server/ps/...") and
#                                     the generated protos ("proto/...")
#   P/lib/gradsync/libgradsync_*.a    the static libraries
#   P/lib/cmake/gradsync/             gradsyncConfig.cmake and its targets
# so that a program needs only
#   find_package(gradsync REQUIRED)
#   target_link_libraries(app PRIVATE gradsync::collectives)
# and each target carries its include directory, C++17 and its
# dependencies (Abseil, gRPC, Protobuf, OpenSSL, cpp-httplib, CUDA).
#
# Public targets (docs/library.md):
#   gradsync::collectives         Communicator, the stores, the TCP and
#                                 shared-memory ring, hierarchical (and NCCL
#                                 in a CUDA build)
#   gradsync::store               the rendezvous store over gRPC (server and
#                                 client)
#   gradsync::ps_client           the parameter-server client
#   gradsync::coordinator_client  the coordinator's gRPC client
# Each gradsync library they pull in is exported too, as gradsync::<name>
# (its target name without the gradsync_ prefix).
#
# Included from the top CMakeLists.txt after every library is defined: the
# export set is computed from the public targets' link closure, so moving a
# source between libraries needs no edit here.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GRADSYNC_PACKAGE_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/gradsync)
set(GRADSYNC_PACKAGE_LIBDIR ${CMAKE_INSTALL_LIBDIR}/gradsync)
set(GRADSYNC_PACKAGE_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gradsync)

# The public targets: name in the package -> the build's libraries behind
# it (those that exist in this build).
set(gradsync_public_collectives gradsync_collectives gradsync_shm gradsync_tcp
    gradsync_hierarchical gradsync_algorithms gradsync_nccl)
set(gradsync_public_store gradsync_store)
set(gradsync_public_ps_client gradsync_ps_client)
set(gradsync_public_coordinator_client gradsync_coordinator_client)
set(gradsync_public_names collectives store ps_client coordinator_client)

# Appends to ${out} the gradsync libraries (this project's, not imported)
# that `target` links, directly or through others.
function(gradsync_link_closure target out)
  set(seen ${${out}})
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue current)
    if(NOT TARGET ${current} OR current IN_LIST seen)
      continue()
    endif()
    get_target_property(imported ${current} IMPORTED)
    if(imported)
      continue()
    endif()
    get_target_property(aliased ${current} ALIASED_TARGET)
    if(aliased)
      list(APPEND queue ${aliased})
      continue()
    endif()
    list(APPEND seen ${current})
    get_target_property(type ${current} TYPE)
    set(links)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct ${current} LINK_LIBRARIES)
      if(direct)
        list(APPEND links ${direct})
      endif()
    endif()
    get_target_property(interface ${current} INTERFACE_LINK_LIBRARIES)
    if(interface)
      list(APPEND links ${interface})
    endif()
    foreach(link IN LISTS links)
      # A static library's private dependency: $<LINK_ONLY:name>.
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" link "${link}")
      if(TARGET ${link})
        list(APPEND queue ${link})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

set(gradsync_exported)
foreach(name IN LISTS gradsync_public_names)
  set(members)
  foreach(library IN LISTS gradsync_public_${name})
    if(TARGET ${library})
      list(APPEND members ${library})
    endif()
  endforeach()
  if(NOT members)
    message(FATAL_ERROR "gradsync package: no library behind gradsync::${name}")
  endif()
  # gradsync::<name> is an umbrella over its libraries when it has several
  # (or when its one library's own name differs).
  list(LENGTH members count)
  if(count EQUAL 1 AND members STREQUAL "gradsync_${name}")
    gradsync_link_closure(${members} gradsync_exported)
  else()
    add_library(gradsync_package_${name} INTERFACE)
    target_link_libraries(gradsync_package_${name} INTERFACE ${members})
    set_target_properties(gradsync_package_${name} PROPERTIES
      EXPORT_NAME ${name})
    gradsync_link_closure(gradsync_package_${name} gradsync_exported)
  endif()
endforeach()

foreach(library IN LISTS gradsync_exported)
  get_target_property(export_name ${library} EXPORT_NAME)
  if(NOT export_name)
    string(REGEX REPLACE "^gradsync_" "" export_name ${library})
    # An umbrella took the public name (gradsync::collectives over
    # gradsync_collectives and its backends): the core keeps _core.
    if(TARGET gradsync_package_${export_name})
      string(APPEND export_name _core)
    endif()
    set_target_properties(${library} PROPERTIES EXPORT_NAME ${export_name})
  endif()
  get_target_property(type ${library} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    # The build finds headers through the directory-wide include path; the
    # install tree through each target's.
    target_include_directories(${library} INTERFACE
      $<INSTALL_INTERFACE:${GRADSYNC_PACKAGE_INCLUDEDIR}>)
  endif()
  target_compile_features(${library} INTERFACE cxx_std_17)
endforeach()

install(TARGETS ${gradsync_exported} EXPORT gradsyncTargets
        ARCHIVE DESTINATION ${GRADSYNC_PACKAGE_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${GRADSYNC_PACKAGE_LIBDIR} COMPONENT dev)
install(EXPORT gradsyncTargets NAMESPACE gradsync::
        DESTINATION ${GRADSYNC_PACKAGE_CMAKEDIR} COMPONENT dev)

# The headers: every header of the rooms the libraries come from, by their
# repository paths (installed headers include each other as the sources
# do), and the generated protos.
foreach(room common security observability jobspec models collectives study server)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${room})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${room}
            DESTINATION ${GRADSYNC_PACKAGE_INCLUDEDIR} COMPONENT dev
            FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
  endif()
endforeach()
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto
        DESTINATION ${GRADSYNC_PACKAGE_INCLUDEDIR} COMPONENT dev
        FILES_MATCHING PATTERN "*.pb.h"
        PATTERN "CMakeFiles" EXCLUDE)

# What gradsyncConfig.cmake must find before the targets load: the
# dependencies this build found, whichever of them the exported libraries
# link (a find is cheap, and every one is a Debian package of gradsync-dev).
set(GRADSYNC_PACKAGE_HAVE_NCCL ${GRADSYNC_HAVE_NCCL})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/gradsyncConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/gradsyncConfig.cmake
  INSTALL_DESTINATION ${GRADSYNC_PACKAGE_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/gradsyncConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/gradsyncConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/gradsyncConfigVersion.cmake
        DESTINATION ${GRADSYNC_PACKAGE_CMAKEDIR} COMPONENT dev)
