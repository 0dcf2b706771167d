// libFuzzer harness: ScheduleDb::load on arbitrary bytes, then a save and a reload of what was
// accepted (which must round-trip). Any outcome but a database or a GafError is a bug.
#include "fuzz/fuzz_util.h"
#include "runtime/tensor.h"
#include "schedules/schedule_db.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gaf::fuzz::write_scratch("schedules.json", data, size);
  try {
    gaf::ScheduleDb db = gaf::ScheduleDb::load(path, false);
    const std::string copy = gaf::fuzz::scratch_dir() + "/saved.json";
    db.save(copy);
    if (gaf::ScheduleDb::load(copy, false).entries().size() != db.entries().size()) __builtin_trap();
  } catch (const gaf::GafError&) {
  }
  return 0;
}
