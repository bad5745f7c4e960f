#include "security/certs.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

// Owners of OpenSSL objects (each freed with its own function).
template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION,
                               Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using StorePtr =
    std::unique_ptr<X509_STORE, Deleter<X509_STORE, X509_STORE_free>>;
using StoreCtxPtr =
    std::unique_ptr<X509_STORE_CTX,
                    Deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;
void FreeGeneralNames(GENERAL_NAMES* names) {
  sk_GENERAL_NAME_pop_free(names, GENERAL_NAME_free);
}
using NamesPtr =
    std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, FreeGeneralNames>>;

// The validity starts this far back, for hosts whose clocks disagree.
constexpr long kClockSkewSeconds = 3600;

// OpenSSL's queued reasons (this thread's), emptied; "" when none.
std::string TakeOpenSslErrors() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(code, text, sizeof(text));
    absl::StrAppend(&out, out.empty() ? "" : "; ", text);
  }
  return out;
}

[[nodiscard]] absl::Status OpenSslError(absl::string_view what) {
  const std::string reasons = TakeOpenSslErrors();
  return absl::InternalError(absl::StrCat(
      what, reasons.empty() ? "" : absl::StrCat(" (OpenSSL: ", reasons, ")")));
}

// Never asks for a passphrase (the default callback would read the
// terminal): an encrypted key simply fails to load.
int NoPassphrase(char*, int, int, void*) { return 0; }

BioPtr ReadBio(absl::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

[[nodiscard]] absl::StatusOr<std::string> BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size <= 0 || data == nullptr) return OpenSslError("empty PEM output");
  return std::string(data, static_cast<size_t>(size));
}

[[nodiscard]] absl::StatusOr<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpenSslError("cannot write a certificate as PEM");
  }
  return BioText(bio.get());
}

[[nodiscard]] absl::StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr,
                               nullptr) != 1) {
    return OpenSslError("cannot write a private key as PEM");
  }
  return BioText(bio.get());
}

[[nodiscard]] absl::StatusOr<X509Ptr> ParseCert(absl::string_view pem,
                                                absl::string_view what) {
  ERR_clear_error();
  BioPtr bio = ReadBio(pem);
  X509Ptr cert(bio == nullptr ? nullptr
                              : PEM_read_bio_X509(bio.get(), nullptr,
                                                  NoPassphrase, nullptr));
  if (cert == nullptr) {
    const std::string reasons = TakeOpenSslErrors();
    return absl::InvalidArgumentError(
        absl::StrCat(what, " holds no PEM certificate",
                     reasons.empty() ? "" : absl::StrCat(" (", reasons, ")")));
  }
  return cert;
}

[[nodiscard]] absl::StatusOr<KeyPtr> ParseKey(absl::string_view pem,
                                              absl::string_view what) {
  ERR_clear_error();
  BioPtr bio = ReadBio(pem);
  KeyPtr key(bio == nullptr ? nullptr
                            : PEM_read_bio_PrivateKey(bio.get(), nullptr,
                                                      NoPassphrase, nullptr));
  if (key == nullptr) {
    TakeOpenSslErrors();
    return absl::InvalidArgumentError(
        absl::StrCat(what, " holds no unencrypted PEM private key"));
  }
  return key;
}

[[nodiscard]] absl::StatusOr<KeyPtr> NewKey() {
  ERR_clear_error();
  KeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (key == nullptr) return OpenSslError("cannot make an EC P-256 key");
  return key;
}

// One extension from OpenSSL's configuration syntax ("critical,CA:TRUE"),
// with `issuer` and `subject` as the context (key identifiers).
[[nodiscard]] absl::Status AddExtension(X509* issuer, X509* subject, int nid,
                                        const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, subject, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (ext == nullptr || X509_add_ext(subject, ext.get(), -1) != 1) {
    return OpenSslError(absl::StrCat("cannot add the extension ",
                                     OBJ_nid2sn(nid), " = ", value));
  }
  return absl::OkStatus();
}

// A certificate for `key` named `common_name`, without extensions or a
// signature yet; issued by `issuer_name` (its own name when null).
[[nodiscard]] absl::StatusOr<X509Ptr> NewCertBody(EVP_PKEY* key,
                                                  absl::string_view common_name,
                                                  X509_NAME* issuer_name,
                                                  int days) {
  if (days < 1 || days > kMaxCertificateDays) {
    return absl::InvalidArgumentError(
        absl::StrCat("a certificate's validity is ", days, " days; use 1 to ",
                     kMaxCertificateDays));
  }
  X509Ptr cert(X509_new());
  BignumPtr serial(BN_new());
  if (cert == nullptr || serial == nullptr ||
      X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) ==
          nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kClockSkewSeconds) ==
          nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), days, 0, nullptr) ==
          nullptr ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return OpenSslError("cannot fill in a certificate");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn(common_name);
  if (X509_NAME_add_entry_by_txt(
          name, "O", MBSTRING_ASC,
          reinterpret_cast<const unsigned char*>("gradsync"), -1, -1, 0) != 1 ||
      X509_NAME_add_entry_by_txt(
          name, "CN", MBSTRING_UTF8,
          reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(),
                           issuer_name != nullptr ? issuer_name : name) != 1) {
    return OpenSslError(
        absl::StrCat("cannot name a certificate '", common_name, "'"));
  }
  return cert;
}

[[nodiscard]] absl::Status AddSubjectAltNames(X509* cert,
                                              const LeafSpec& spec) {
  NamesPtr names(sk_GENERAL_NAME_new_null());
  if (names == nullptr) return OpenSslError("cannot list subjectAltNames");
  auto add = [&names](int type, const std::string& value) -> absl::Status {
    GENERAL_NAME* name =
        a2i_GENERAL_NAME(nullptr, nullptr, nullptr, type, value.c_str(), 0);
    if (name == nullptr) {
      TakeOpenSslErrors();
      return absl::InvalidArgumentError(
          absl::StrCat("'", value, "' is not a valid ",
                       type == GEN_IPADD ? "IP address" : "DNS name",
                       " for a subjectAltName"));
    }
    if (sk_GENERAL_NAME_push(names.get(), name) <= 0) {
      GENERAL_NAME_free(name);
      return OpenSslError("cannot add a subjectAltName");
    }
    return absl::OkStatus();
  };
  for (const std::string& dns : spec.dns_names) {
    RETURN_IF_ERROR(add(GEN_DNS, dns));
  }
  for (const std::string& ip : spec.ip_addresses) {
    RETURN_IF_ERROR(add(GEN_IPADD, ip));
  }
  if (sk_GENERAL_NAME_num(names.get()) == 0) return absl::OkStatus();
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0,
                        X509V3_ADD_DEFAULT) != 1) {
    return OpenSslError("cannot add the subjectAltName extension");
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::StatusOr<CertAndKey> Finish(X509* cert, EVP_PKEY* key,
                                                EVP_PKEY* signer) {
  if (X509_sign(cert, signer, EVP_sha256()) <= 0) {
    return OpenSslError("cannot sign a certificate");
  }
  CertAndKey out;
  ASSIGN_OR_RETURN(out.cert_pem, CertPem(cert));
  ASSIGN_OR_RETURN(out.key_pem, KeyPem(key));
  return out;
}

absl::Time AsnTime(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) {
    return absl::InfinitePast();
  }
  return absl::FromTimeT(timegm(&tm));
}

std::string CommonName(X509* cert) {
  char text[256] = {};
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
                                          NID_commonName, text, sizeof(text));
  return n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
}

std::string Day(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d %H:%M UTC", t, absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<CertAndKey> NewCertificateAuthority(
    absl::string_view common_name, int days) {
  ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  ASSIGN_OR_RETURN(X509Ptr cert,
                   NewCertBody(key.get(), common_name, nullptr, days));
  X509* c = cert.get();
  RETURN_IF_ERROR(
      AddExtension(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  RETURN_IF_ERROR(
      AddExtension(c, c, NID_key_usage, "critical,keyCertSign,cRLSign"));
  RETURN_IF_ERROR(AddExtension(c, c, NID_subject_key_identifier, "hash"));
  RETURN_IF_ERROR(
      AddExtension(c, c, NID_authority_key_identifier, "keyid:always"));
  return Finish(c, key.get(), key.get());
}

absl::StatusOr<CertAndKey> IssueCertificate(const CertAndKey& ca,
                                            const LeafSpec& spec, int days) {
  if (!spec.server_auth && !spec.client_auth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "certificate '", spec.common_name,
        "' would be good for nothing: give it serverAuth or clientAuth"));
  }
  ASSIGN_OR_RETURN(X509Ptr ca_cert, ParseCert(ca.cert_pem, "the CA"));
  ASSIGN_OR_RETURN(KeyPtr ca_key, ParseKey(ca.key_pem, "the CA"));
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    TakeOpenSslErrors();
    return absl::InvalidArgumentError(
        "the CA's key does not belong to its certificate");
  }
  ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  ASSIGN_OR_RETURN(X509Ptr cert,
                   NewCertBody(key.get(), spec.common_name,
                               X509_get_subject_name(ca_cert.get()), days));
  X509* c = cert.get();
  RETURN_IF_ERROR(AddExtension(ca_cert.get(), c, NID_basic_constraints,
                               "critical,CA:FALSE"));
  RETURN_IF_ERROR(AddExtension(ca_cert.get(), c, NID_key_usage,
                               "critical,digitalSignature"));
  const char* usage = spec.server_auth && spec.client_auth
                          ? "serverAuth,clientAuth"
                      : spec.server_auth ? "serverAuth"
                                         : "clientAuth";
  RETURN_IF_ERROR(AddExtension(ca_cert.get(), c, NID_ext_key_usage, usage));
  RETURN_IF_ERROR(
      AddExtension(ca_cert.get(), c, NID_subject_key_identifier, "hash"));
  RETURN_IF_ERROR(AddExtension(ca_cert.get(), c, NID_authority_key_identifier,
                               "keyid:always"));
  RETURN_IF_ERROR(AddSubjectAltNames(c, spec));
  return Finish(c, key.get(), ca_key.get());
}

absl::StatusOr<ClusterCertificates> NewClusterCertificates(int days) {
  ClusterCertificates certs;
  ASSIGN_OR_RETURN(certs.ca,
                   NewCertificateAuthority("gradsync cluster CA", days));
  LeafSpec node;
  node.common_name = "gradsync daemon";
  node.server_auth = true;
  node.client_auth = true;  // daemons call each other too
  node.dns_names = {std::string(kClusterServerName), "localhost"};
  node.ip_addresses = {"127.0.0.1", "::1"};
  ASSIGN_OR_RETURN(certs.node, IssueCertificate(certs.ca, node, days));
  LeafSpec client;
  client.common_name = "gradsync user";
  client.client_auth = true;
  ASSIGN_OR_RETURN(certs.client, IssueCertificate(certs.ca, client, days));
  return certs;
}

absl::Status CheckCertificate(absl::string_view ca_pem,
                              absl::string_view cert_pem,
                              absl::string_view key_pem, absl::string_view what,
                              absl::Time now) {
  // Every certificate of the CA file is a trusted root (a bundle is fine).
  StorePtr store(X509_STORE_new());
  if (store == nullptr) return OpenSslError("cannot make a certificate store");
  ERR_clear_error();
  BioPtr bio = ReadBio(ca_pem);
  int roots = 0;
  while (bio != nullptr) {
    X509Ptr root(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
    if (root == nullptr) break;
    if (X509_STORE_add_cert(store.get(), root.get()) == 1) ++roots;
  }
  TakeOpenSslErrors();  // the end of the file reads as an error
  if (roots == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the CA file for ", what, " holds no PEM certificate"));
  }
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCert(cert_pem, what));
  ASSIGN_OR_RETURN(KeyPtr key,
                   ParseKey(key_pem, absl::StrCat("the key of ", what)));
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    TakeOpenSslErrors();
    return absl::InvalidArgumentError(absl::StrCat(
        "the private key does not belong to ", what,
        " (the files come from different `gradsync certs init` runs?)"));
  }
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (ctx == nullptr ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr) != 1) {
    return OpenSslError("cannot start verifying a certificate");
  }
  X509_STORE_CTX_set_time(ctx.get(), 0, absl::ToTimeT(now));
  if (X509_verify_cert(ctx.get()) == 1) return absl::OkStatus();
  const int error = X509_STORE_CTX_get_error(ctx.get());
  TakeOpenSslErrors();
  switch (error) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return absl::InvalidArgumentError(absl::StrCat(
          what, " expired on ", Day(AsnTime(X509_get0_notAfter(cert.get()))),
          "; make new certificates (gradsync certs init)"));
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is not valid before ",
                       Day(AsnTime(X509_get0_notBefore(cert.get()))),
                       "; is this host's clock right?"));
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          " is not signed by the cluster CA next to it; copy ca.pem "
          "and the certificates from the same `gradsync certs init`"));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, " does not verify against the cluster CA: ",
                       X509_verify_cert_error_string(error)));
  }
}

absl::StatusOr<CertificateInfo> InspectCertificate(absl::string_view cert_pem) {
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCert(cert_pem, "the certificate"));
  CertificateInfo info;
  info.common_name = CommonName(cert.get());
  info.not_after = AsnTime(X509_get0_notAfter(cert.get()));
  return info;
}

}  // namespace gradsync
