return { controller = "configmap-marker" }
-- SPDX-License-Identifier: Apache-2.0
