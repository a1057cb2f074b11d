"""terraform test of the shared modules every lab kind uses: the inventory contract and the management block."""

from __future__ import annotations

import shutil

import pytest

from labtools import terraform_test

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]


def test_inventory_module_groups_hosts_and_refuses_what_the_contract_does_not_allow(tmp_path):
    terraform_test("terraform/modules/inventory", tmp_path)


def test_management_module_derives_block_and_mac_byte_from_the_name(tmp_path):
    terraform_test("terraform/modules/management", tmp_path)
