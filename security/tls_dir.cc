#include "security/tls_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"

namespace gradsync {
namespace {

constexpr size_t kMaxPemBytes = size_t{1} << 20;

struct FileToWrite {
  absl::string_view name;
  const std::string* contents;
  mode_t mode;
};

std::vector<FileToWrite> FilesOf(const ClusterCertificates& certs) {
  return {{kCaCertFile, &certs.ca.cert_pem, 0644},
          {kCaKeyFile, &certs.ca.key_pem, 0600},
          {kNodeCertFile, &certs.node.cert_pem, 0644},
          {kNodeKeyFile, &certs.node.key_pem, 0600},
          {kClientCertFile, &certs.client.cert_pem, 0644},
          {kClientKeyFile, &certs.client.key_pem, 0600}};
}

std::string Join(const std::string& dir, absl::string_view name) {
  return absl::StrCat(dir, "/", name);
}

// `dir` with its missing parents; the last one made with mode 0700.
[[nodiscard]] absl::Status MakeDir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " exists and is not a directory"));
  }
  const std::filesystem::path parent =
      std::filesystem::path(dir).lexically_normal().parent_path();
  std::error_code error;
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  if (error || (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)) {
    return absl::InternalError(
        absl::StrCat("cannot create the directory ", dir, ": ",
                     error ? error.message() : std::strerror(errno)));
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::Status WriteNewFile(int dir_fd, const std::string& path,
                                        absl::string_view name,
                                        const std::string& contents,
                                        mode_t mode) {
  UniqueFd fd(openat(dir_fd, std::string(name).c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     mode));
  if (fd.get() < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  // The umask may have taken bits off a certificate's 0644; never adds any.
  if (fchmod(fd.get(), mode) != 0) {
    return absl::InternalError(absl::StrCat("cannot set the mode of ", path,
                                            ": ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n =
        write(fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(
          absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) != 0 || fd.Close() != 0) {
    return absl::InternalError(absl::StrCat(
        "cannot write ", path, " to disk: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::StatusOr<std::string> ReadPemFile(const std::string& dir,
                                                      absl::string_view name,
                                                      TlsRole role) {
  const std::string path = Join(dir, name);
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    const int error = errno;
    const char* needs = role == TlsRole::kDaemon
                            ? "ca.pem, node.pem and node.key"
                            : "ca.pem, client.pem and client.key";
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(
          "the TLS directory ", dir, " has no ", name,
          ": make it with `gradsync certs init ", dir, "`, or copy ", needs,
          " into it from the directory that command made"));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot read ", path, ": ", std::strerror(error),
        error == EACCES ? " (run as the account the file belongs to)" : ""));
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file"));
  }
  if (static_cast<size_t>(st.st_size) > kMaxPemBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is ", st.st_size, " bytes; a PEM file here is a few KiB"));
  }
  std::string contents(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n =
        read(fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  contents.resize(done);
  return contents;
}

}  // namespace

std::vector<std::string> TlsDirFiles(const std::string& dir) {
  std::vector<std::string> paths;
  for (absl::string_view name :
       {kCaCertFile, kCaKeyFile, kNodeCertFile, kNodeKeyFile, kClientCertFile,
        kClientKeyFile}) {
    paths.push_back(Join(dir, name));
  }
  return paths;
}

absl::Status WriteTlsDir(const std::string& dir,
                         const ClusterCertificates& certs, bool force) {
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        "name the directory for the certificates");
  }
  RETURN_IF_ERROR(MakeDir(dir));
  UniqueFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) {
    return absl::InternalError(absl::StrCat("cannot open the directory ", dir,
                                            ": ", std::strerror(errno)));
  }
  const std::vector<FileToWrite> files = FilesOf(certs);
  std::vector<std::string> present;
  for (const FileToWrite& file : files) {
    struct stat st {};
    const std::string name(file.name);
    if (fstatat(dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      continue;
    }
    if (!force) {
      present.push_back(name);
      continue;
    }
    if (unlinkat(dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return absl::InternalError(absl::StrCat("cannot remove ", Join(dir, name),
                                              ": ", std::strerror(errno)));
    }
  }
  if (!present.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " already holds ", absl::StrJoin(present, ", "),
        "; nothing was written. Pass --force to replace them (every daemon "
        "and user then needs the new files), or pick another directory"));
  }
  for (const FileToWrite& file : files) {
    RETURN_IF_ERROR(WriteNewFile(dir_fd.get(), Join(dir, file.name), file.name,
                                 *file.contents, file.mode));
  }
  if (fsync(dir_fd.get()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot write the directory ", dir,
                     " to disk: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void RemoveTlsDir(const std::string& dir) {
  for (const std::string& path : TlsDirFiles(dir)) unlink(path.c_str());
  rmdir(dir.c_str());  // only when empty
}

absl::StatusOr<TlsFiles> ReadTlsDir(const std::string& dir, TlsRole role) {
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        "the TLS directory is empty; name the one `gradsync certs init` made");
  }
  const absl::string_view cert_name =
      role == TlsRole::kDaemon ? kNodeCertFile : kClientCertFile;
  const absl::string_view key_name =
      role == TlsRole::kDaemon ? kNodeKeyFile : kClientKeyFile;
  TlsFiles files;
  files.cert_path = Join(dir, cert_name);
  ASSIGN_OR_RETURN(files.ca_pem, ReadPemFile(dir, kCaCertFile, role));
  ASSIGN_OR_RETURN(files.cert_pem, ReadPemFile(dir, cert_name, role));
  ASSIGN_OR_RETURN(files.key_pem, ReadPemFile(dir, key_name, role));
  RETURN_IF_ERROR(CheckCertificate(files.ca_pem, files.cert_pem, files.key_pem,
                                   files.cert_path));
  return files;
}

}  // namespace gradsync
