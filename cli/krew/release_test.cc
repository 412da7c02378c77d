// The plugin's krew release, checked as krew would check it: the archive
// hack/krew-archive.sh makes from the built plugin, and the manifest hack/krew-manifest.sh
// writes for it from cli/krew/migrate.yaml.in. The manifest rules are krew's
// (sigs.k8s.io/krew internal/index/validation: apiVersion, kind, a safe name matching the
// file, a one-line shortDescription, a v-prefixed semantic version, platforms with uri,
// a 64-hex sha256, bin, non-empty from/to file operations and an os/arch selector); the
// archive rules are those of krew's extraction (regular files and directories only,
// no absolute or ".." entries), and the sha256 must be the archive's.
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

struct Output {
  int code;
  std::string out;
};

// Runs a shell command line (from the test's runfiles directory); stdout captured.
Output Sh(const std::string& command) {
  Output r{-1, {}};
  // NOLINTNEXTLINE(bugprone-command-processor): running a shell command line is the point.
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string TmpDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Sha256Hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  REQUIRE(EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) == 1);
  std::string hex;
  char b[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

// The platform a release made on this machine is for, as hack/krew-release.sh names it.
std::pair<std::string, std::string> HostPlatform() {
  utsname u{};
  REQUIRE(uname(&u) == 0);
  std::string arch = u.machine;
  if (arch == "x86_64") arch = "amd64";
  if (arch == "aarch64") arch = "arm64";
  return {"linux", arch};
}

const std::string kVersion = "v0.1.0";

std::string ArchivePath(const std::string& dir) {
  auto [os, arch] = HostPlatform();
  return dir + "/kubectl-migrate_" + kVersion + "_" + os + "_" + arch + ".tar.gz";
}

std::string MakeArchive(const std::string& dir, const std::string& epoch = "1767225600") {
  REQUIRE(Sh("mkdir -p '" + dir + "'").code == 0);
  std::string path = ArchivePath(dir);
  auto r = Sh("SOURCE_DATE_EPOCH=" + epoch + " hack/krew-archive.sh '" + path +
              "' cli/kubectl-migrate cli/kubectl_complete-migrate LICENSE 2>&1");
  INFO(r.out);
  REQUIRE(r.code == 0);
  return path;
}

YAML::Node MakeManifest(const std::string& archive, std::string* text = nullptr) {
  auto r = Sh("hack/krew-manifest.sh " + kVersion + " https://example.invalid/" +
              archive.substr(archive.rfind('/') + 1) + " '" + archive +
              "' https://example.invalid/kubevirt-migration-target");
  REQUIRE(r.code == 0);
  if (text != nullptr) *text = r.out;
  return YAML::Load(r.out);
}

// `tar -tv` lines: the type is the first character of the mode ('-' regular, 'd' directory).
std::map<std::string, std::string> ArchiveEntries(const std::string& archive) {
  auto r = Sh("tar -tvzf '" + archive + "'");
  REQUIRE(r.code == 0);
  std::map<std::string, std::string> modes;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string mode, owner, size, date, time, name;
    f >> mode >> owner >> size >> date >> time >> name;
    modes[name] = mode;
  }
  return modes;
}

TEST_CASE("the release archive holds the plugin, its completion and LICENSE, regular files only") {
  auto entries = ArchiveEntries(MakeArchive(TmpDir() + "/a"));
  CHECK(entries == std::map<std::string, std::string>{{"LICENSE", "-rw-r--r--"},
                                                      {"kubectl-migrate", "-rwxr-xr-x"},
                                                      {"kubectl_complete-migrate", "-rwxr-xr-x"}});
}

TEST_CASE("the same inputs give the same archive bytes") {
  std::string a = ReadFile(MakeArchive(TmpDir() + "/r1"));
  std::string b = ReadFile(MakeArchive(TmpDir() + "/r2"));
  CHECK(!a.empty());
  CHECK(Sha256Hex(a) == Sha256Hex(b));
  // The archive's timestamps come from SOURCE_DATE_EPOCH, nothing else.
  CHECK(Sha256Hex(a) != Sha256Hex(ReadFile(MakeArchive(TmpDir() + "/r3", "0"))));
}

TEST_CASE("the manifest has every field krew requires, and the archive's sha256") {
  std::string archive = MakeArchive(TmpDir() + "/m");
  std::string text;
  YAML::Node m = MakeManifest(archive, &text);
  CAPTURE(text);
  CHECK(text.find('@') == std::string::npos);  // every placeholder filled
  CHECK(m["apiVersion"].as<std::string>() == "krew.googlecontainertools.github.com/v1alpha2");
  CHECK(m["kind"].as<std::string>() == "Plugin");
  const auto name = m["metadata"]["name"].as<std::string>();
  CHECK(std::regex_match(name, std::regex(R"([\w-]+)")));
  // krew-index names the file after the plugin; the plugin is invoked as `kubectl <name>`.
  CHECK(name == "migrate");
  const YAML::Node spec = m["spec"];
  const auto short_desc = spec["shortDescription"].as<std::string>();
  CHECK(!short_desc.empty());
  CHECK(short_desc.find_first_of("\r\n") == std::string::npos);
  CHECK(spec["version"].as<std::string>() == kVersion);
  CHECK(std::regex_match(
      spec["version"].as<std::string>(),
      std::regex(R"(v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?)")));
  CHECK(!spec["homepage"].as<std::string>().empty());

  const YAML::Node platforms = spec["platforms"];
  REQUIRE(platforms.IsSequence());
  // One archive per platform a release builds; this machine's is the one made here.
  REQUIRE(platforms.size() == 1);
  const YAML::Node p = platforms[0];
  auto [os, arch] = HostPlatform();
  const YAML::Node labels = p["selector"]["matchLabels"];
  REQUIRE(labels.IsMap());
  CHECK(labels.size() == 2);
  CHECK(labels["os"].as<std::string>() == os);
  CHECK(labels["arch"].as<std::string>() == arch);
  CHECK(!p["selector"]["matchExpressions"]);
  const auto uri = p["uri"].as<std::string>();
  CHECK(uri == "https://example.invalid/" + archive.substr(archive.rfind('/') + 1));
  const auto sha = p["sha256"].as<std::string>();
  CHECK(std::regex_match(sha, std::regex("[a-f0-9]{64}")));
  CHECK(sha == Sha256Hex(ReadFile(archive)));

  // krew moves each `from` to `to` (relative to the install directory), then links `bin`.
  const auto bin = p["bin"].as<std::string>();
  CHECK(bin == "kubectl-migrate");
  const YAML::Node files = p["files"];
  REQUIRE(files.IsSequence());
  REQUIRE(files.size() > 0);
  auto entries = ArchiveEntries(archive);
  std::set<std::string> installed;
  for (const auto& f : files) {
    const auto from = f["from"].as<std::string>(), to = f["to"].as<std::string>();
    CAPTURE(from, to);
    CHECK(!from.empty());
    CHECK(to == ".");
    CHECK(entries.count(from) == 1);
    installed.insert(from);
  }
  for (const auto& [entry, mode] : entries) {
    CAPTURE(entry);
    CHECK(installed.count(entry) == 1);  // nothing shipped that the manifest drops
    CHECK(entry.find("..") == std::string::npos);
    CHECK(entry[0] != '/');
  }
  CHECK(installed.count(bin) == 1);
  CHECK(entries[bin] == "-rwxr-xr-x");
  CHECK(installed.count("kubectl_complete-migrate") == 1);
}

TEST_CASE("the manifest script refuses what krew would") {
  std::string archive = MakeArchive(TmpDir() + "/bad");
  CHECK(Sh("hack/krew-manifest.sh 0.1.0 u '" + archive + "' h >/dev/null 2>&1").code == 2);
  CHECK(Sh("hack/krew-manifest.sh v0.2.0 u '" + archive + "' h >/dev/null 2>&1").code == 2);
  CHECK(Sh("hack/krew-manifest.sh v0.1.0 u >/dev/null 2>&1").code == 2);
}

TEST_CASE("unpacked, the plugin runs and its completion answers kubectl's protocol") {
  std::string archive = MakeArchive(TmpDir() + "/u");
  std::string dir = TmpDir() + "/installed";
  REQUIRE(Sh("mkdir -p '" + dir + "' && tar -xzf '" + archive + "' -C '" + dir + "'").code == 0);
  // No cluster is reachable: completion still offers the subcommands.
  const std::string env = "env -i PATH=/usr/bin:/bin HOME='" + dir + "' KUBECONFIG=/nonexistent ";
  auto help = Sh(env + "'" + dir + "/kubectl-migrate' --help");
  CHECK(help.code == 0);
  CHECK(help.out.find("kubectl migrate NAME [options]") != std::string::npos);
  auto comp = Sh(env + "'" + dir + "/kubectl_complete-migrate' li 2>/dev/null");
  CHECK(comp.code == 0);
  CHECK(comp.out == "list\tList placed migrations with phase, term, node and conditions\n:4\n");
  auto flags = Sh(env + "'" + dir + "/kubectl_complete-migrate' cancel --v 2>/dev/null");
  CHECK(flags.out == "--vmi\tCancel the active migration of this VMI.\n:4\n");
}

}  // namespace
