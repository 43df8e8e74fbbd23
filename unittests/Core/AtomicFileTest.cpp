//===- AtomicFileTest.cpp - what write_file_atomically leaves behind ----------===//
#include "dlc/Core/AtomicFile.h"

#include "dlc/Core/Error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

class AtomicFile : public ::testing::Test {
protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("dlc-atomic-file-" + std::to_string(getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  static std::string read(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static void write(const fs::path &path, const std::string &text) {
    dlc::write_file_atomically(path.string(), [&](std::ostream &out) { out << text; });
  }
  /// The names in the folder: no temporary may be left.
  std::vector<std::string> names() const {
    std::vector<std::string> found;
    for (const fs::directory_entry &entry : fs::directory_iterator(folder_))
      found.push_back(entry.path().filename().string());
    std::sort(found.begin(), found.end());
    return found;
  }

  fs::path folder_;
};

TEST_F(AtomicFile, ReplacesARegularFileAndKeepsItsPermissions) {
  fs::path file = folder_ / "a.txt";
  write(file, "old");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  write(file, "new");
  EXPECT_EQ(read(file), "new");
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(names(), std::vector<std::string>{"a.txt"});
}

TEST_F(AtomicFile, ASymbolicLinkStaysALinkAndTheFileItNamesIsReplaced) {
  fs::create_directories(folder_ / "real");
  write(folder_ / "real" / "data.bin", "old");
  fs::create_symlink("real/data.bin", folder_ / "relative");                // relative
  fs::create_symlink(folder_ / "relative", folder_ / "chained");            // to a link
  fs::create_symlink(folder_ / "real" / "absent.bin", folder_ / "dangling"); // no file yet
  write(folder_ / "relative", "through a relative link");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(folder_ / "relative")));
  EXPECT_EQ(read(folder_ / "real" / "data.bin"), "through a relative link");
  write(folder_ / "chained", "through two links");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(folder_ / "chained")));
  EXPECT_EQ(read(folder_ / "real" / "data.bin"), "through two links");
  write(folder_ / "dangling", "made");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(folder_ / "dangling")));
  EXPECT_EQ(read(folder_ / "real" / "absent.bin"), "made");
  // The temporaries went beside the files, and went.
  EXPECT_EQ(names(), (std::vector<std::string>{"chained", "dangling", "real", "relative"}));
  std::vector<std::string> real;
  for (const fs::directory_entry &entry : fs::directory_iterator(folder_ / "real"))
    real.push_back(entry.path().filename().string());
  std::sort(real.begin(), real.end());
  EXPECT_EQ(real, (std::vector<std::string>{"absent.bin", "data.bin"}));
}

TEST_F(AtomicFile, AFifoIsWrittenInPlaceNotReplaced) {
  // What `--output /dev/null` showed: a rename put a regular file where the node was.
  fs::path fifo = folder_ / "pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read(fifo); });
  write(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_EQ(names(), std::vector<std::string>{"pipe"});
}

TEST_F(AtomicFile, ALinkToAFifoStaysALinkToAFifo) {
  fs::path fifo = folder_ / "pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(fifo, folder_ / "link");
  std::string received;
  std::thread reader([&] { received = read(fifo); });
  write(folder_ / "link", "via the link");
  reader.join();
  EXPECT_EQ(received, "via the link");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(folder_ / "link")));
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
}

TEST_F(AtomicFile, ADirectoryAndALinkLoopAreRefusedByName) {
  fs::create_directories(folder_ / "dir");
  try {
    dlc::write_file_atomically((folder_ / "dir").string(), [](std::ostream &) {}, "save");
    FAIL() << "a directory was written";
  } catch (const dlc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("save: cannot write '"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dir': it is a directory"), std::string::npos)
        << e.what();
  }
  fs::create_symlink(folder_ / "loop-b", folder_ / "loop-a");
  fs::create_symlink(folder_ / "loop-a", folder_ / "loop-b");
  EXPECT_THROW(write(folder_ / "loop-a", "x"), dlc::Error);
  EXPECT_TRUE(fs::is_directory(folder_ / "dir"));
}

TEST_F(AtomicFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  fs::path file = folder_ / "kept.txt";
  write(file, "old");
  EXPECT_THROW(dlc::write_file_atomically(file.string(),
                                          [](std::ostream &out) {
                                            out << "half";
                                            throw dlc::Error("stopped");
                                          }),
               dlc::Error);
  EXPECT_EQ(read(file), "old");
  EXPECT_EQ(names(), std::vector<std::string>{"kept.txt"});
}

} // namespace
