#include "test/op_test_util.h"
